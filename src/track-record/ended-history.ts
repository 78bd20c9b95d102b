/**
 * What a viewer without current access (accounts/entitlement.ts) sees of a series: its price
 * history to the last close, and its signal history as it stood at `endedHistoryUntil`, just
 * before the signal that was in force ENDED_SIGNAL_DELAY_MS ago. Every signal in it has ended
 * at least that long ago; the track record and the backtest are recomputed over those signals
 * and the closes up to that moment, so no figure depends on a later signal. No current levels.
 *
 * The view changes only when the delay passes a signal's start or a close, so one copy is kept
 * per computed ChartData and reused while its cutoff counts stay the same.
 */
import { endedHistoryUntil } from "../accounts/entitlement.ts";
import { TIMEFRAME_MS } from "../market/timeframes.ts";
import { type CloseSeries, DEFAULT_FEE_PCT, runBacktest } from "./backtest.ts";
import type { ChartData } from "./chart-data.ts";
import { computeTrackRecord } from "./track-record.ts";

/** A series as a viewer without current access sees it. */
export interface EndedHistory {
  /** The series cut at `until`: ended signals only, no levels, record and backtest as of `until`. */
  readonly data: ChartData;
  /** Signals that came into force by this moment (epoch ms) are shown; the figures stand as of it. */
  readonly until: number;
}

/**
 * Per computed copy (replaced at its series' next close or event): when each of its signals
 * came into force, and the last view made of it.
 */
const memo = new WeakMap<ChartData, { inForce: number[]; key: string; view: ChartData | null }>();

/** Number of entries of `times` (ascending) with `time + shift <= limit`. */
function countUpTo(times: ArrayLike<number>, shift: number, limit: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid]! + shift <= limit) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The ended-signals view of `data` at `now`. */
export function endedHistoryOf(data: ChartData, now: number): EndedHistory {
  const tfMs = TIMEFRAME_MS[data.tf];
  let kept = memo.get(data);
  // A signal comes into force at the close of the candle that set it.
  if (kept === undefined)
    memo.set(data, (kept = { inForce: data.events.map((e) => e.candleOpenTime + tfMs), key: "", view: null }));
  const until = endedHistoryUntil(now, kept.inForce);
  const eventCount = countUpTo(kept.inForce, 0, until);
  const closeCount = countUpTo(data.closes.times, tfMs, until);
  const key = `${eventCount}/${closeCount}`;
  if (kept.view !== null && kept.key === key) return { data: kept.view, until };
  const events = data.events.slice(0, eventCount);
  const prefix = (values: ArrayLike<number>) => Float64Array.from({ length: closeCount }, (_, i) => values[i]!);
  const closes: CloseSeries = { times: prefix(data.closes.times), closes: prefix(data.closes.closes) };
  const candles = Array.from({ length: closeCount }, (_, i) => ({
    openTime: closes.times[i]!,
    close: closes.closes[i]!,
  }));
  const record = computeTrackRecord(events, candles);
  const ended: ChartData = {
    ...data,
    events,
    levels: null,
    record,
    closes,
    backtest: runBacktest(record.trades, closes, DEFAULT_FEE_PCT),
  };
  kept.key = key;
  kept.view = ended;
  return { data: ended, until };
}
