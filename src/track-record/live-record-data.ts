/**
 * The live record as /track-record shows it, read from the store: per coin and timeframe the
 * live series (track-record/live-record.ts) and per timeframe its confidence (track-record/live-confidence.ts).
 * The stored inputs are read again only when a signal event or a candle close was stored
 * anywhere (one small stamp query per view); views cut for viewers without current access
 * (the entitlement rule, as track-record/ended-history.ts cuts the chart data) are derived from them.
 */
import { sql } from "drizzle-orm";
import { endedHistoryUntil } from "../accounts/entitlement.ts";
import type { DbHandle } from "../db/client.ts";
import type { SignalName } from "../market/snapshot.ts";
import { isTimeframe, TIMEFRAME_MS, TIMEFRAMES, type Timeframe } from "../market/timeframes.ts";
import { maxDrawdownPct } from "./backtest.ts";
import { DAY_MS, REGIME_LOOKBACK_DAYS, type TimeframeConfidence, timeframeConfidence } from "./live-confidence.ts";
import {
  computeLiveSeries,
  DEFAULT_LIVE_COSTS,
  type LiveCandle,
  type LiveCosts,
  type LiveEvent,
  type LiveSeries,
} from "./live-record.ts";
import { positionValue } from "./trade-costs.ts";

/** What the store holds of one series that has a live signal. */
export interface LiveInputs {
  readonly symbol: string;
  readonly tf: Timeframe;
  readonly events: readonly LiveEvent[];
  /** Closed candles from REGIME_LOOKBACK_DAYS + 1 days before its first live signal on. */
  readonly candles: readonly LiveCandle[];
}

/** One row of the page. */
export interface LiveSeriesView {
  readonly symbol: string;
  readonly tf: Timeframe;
  readonly live: LiveSeries;
  /** Trades after costs, in percent. */
  readonly winRatePct: number | null;
  readonly avgResultPct: number | null;
  readonly totalPct: number | null;
  /** Buying at the first trade's entry open and selling at the last close, same costs; null with no trade. */
  readonly buyHoldPct: number | null;
  readonly maxDrawdownPct: number | null;
  /** The moment the series stands at for a viewer without current access; null when shown to its last close. */
  readonly until: number | null;
}

export interface LiveRecordView {
  readonly costs: LiveCosts;
  readonly series: readonly LiveSeriesView[];
  readonly confidence: readonly TimeframeConfidence[];
}

type Num = number | string;

/** Every series with a live signal event, with its events and candles. */
export async function loadLiveInputs(handle: DbHandle): Promise<LiveInputs[]> {
  const starts = await handle.rows<{ symbol: string; tf: string; since: Num }>(sql`
    SELECT symbol, tf, min(candle_open_time) AS since FROM signal_events WHERE live AND NOT demo GROUP BY symbol, tf
    ORDER BY symbol, tf`);
  const out: LiveInputs[] = [];
  for (const s of starts) {
    if (!isTimeframe(s.tf)) continue;
    const from = Number(s.since) - (REGIME_LOOKBACK_DAYS + 1) * DAY_MS;
    const events = await handle.rows<{
      signal: string;
      price: number;
      defense: number | null;
      candle_open_time: Num;
      live: boolean;
    }>(sql`
      SELECT signal, price, defense, candle_open_time, live FROM signal_events
       WHERE symbol = ${s.symbol} AND tf = ${s.tf} AND NOT demo AND candle_open_time >= ${from}
       ORDER BY candle_open_time, seq`);
    const candles = await handle.rows<{ open_time: Num; open: number; close: number }>(sql`
      SELECT open_time, open, close FROM candles
       WHERE symbol = ${s.symbol} AND tf = ${s.tf} AND closed AND NOT demo AND open_time >= ${from}
       ORDER BY open_time`);
    out.push({
      symbol: s.symbol,
      tf: s.tf,
      events: events.map((e) => ({
        signal: e.signal as SignalName,
        price: Number(e.price),
        defense: e.defense === null ? null : Number(e.defense),
        candleOpenTime: Number(e.candle_open_time),
        live: e.live === true,
      })),
      candles: candles.map((c) => ({ openTime: Number(c.open_time), open: Number(c.open), close: Number(c.close) })),
    });
  }
  return out;
}

/** The series' inputs as they stood at `until` (signals in force and candles closed by then). */
function cutAt(inputs: LiveInputs, until: number): LiveInputs {
  const tfMs = TIMEFRAME_MS[inputs.tf];
  return {
    ...inputs,
    events: inputs.events.filter((e) => e.candleOpenTime + tfMs <= until),
    candles: inputs.candles.filter((c) => c.openTime + tfMs <= until),
  };
}

/** The moment a viewer without current access sees a series at: just before the signal in force 24 hours ago began. */
export function liveCutOf(inputs: LiveInputs, now: number): number {
  const tfMs = TIMEFRAME_MS[inputs.tf];
  return endedHistoryUntil(
    now,
    inputs.events.map((e) => e.candleOpenTime + tfMs),
  );
}

/** How many events and candles a cut keeps: equal counts, equal view. */
function cutCounts(inputs: LiveInputs, until: number): string {
  const tfMs = TIMEFRAME_MS[inputs.tf];
  const events = inputs.events.filter((e) => e.candleOpenTime + tfMs <= until).length;
  const candles = inputs.candles.filter((c) => c.openTime + tfMs <= until).length;
  return `${events}/${candles}`;
}

function seriesView(inputs: LiveInputs, live: LiveSeries, until: number | null, costs: LiveCosts): LiveSeriesView {
  const { trades } = live;
  const results = trades.map((t) => (t.growth - 1) * 100);
  const first = trades[0] ?? live.open;
  const lastClose = live.candles[live.candles.length - 1]?.close;
  const fromEntry = first === null || first === undefined ? -1 : first.entryIndex;
  return {
    symbol: inputs.symbol,
    tf: inputs.tf,
    live,
    until,
    winRatePct: trades.length === 0 ? null : (results.filter((r) => r > 0).length * 100) / trades.length,
    avgResultPct: trades.length === 0 ? null : results.reduce((a, b) => a + b, 0) / trades.length,
    totalPct: trades.length === 0 ? null : (trades.reduce((g, t) => g * t.growth, 1) - 1) * 100,
    buyHoldPct:
      first === null || first === undefined || lastClose === undefined
        ? null
        : (positionValue(1, first.entryPrice, lastClose, {
            fee: costs.feePct / 100,
            slippage: costs.slippagePct / 100,
          }) -
            1) *
          100,
    maxDrawdownPct: fromEntry < 0 ? null : maxDrawdownPct(Array.from(live.equity.subarray(fromEntry))),
  };
}

/** The live record of these series; `now` cuts each series for a viewer without current access, null shows all. */
export function computeLiveRecord(
  all: readonly LiveInputs[],
  now: number | null,
  costs: LiveCosts = DEFAULT_LIVE_COSTS,
): LiveRecordView {
  const series = all.map((inputs) => {
    const until = now === null ? null : liveCutOf(inputs, now);
    const shown = until === null ? inputs : cutAt(inputs, until);
    const live = computeLiveSeries(shown.events, shown.candles, TIMEFRAME_MS[inputs.tf], costs);
    return { inputs: shown, view: seriesView(shown, live, until, costs) };
  });
  const confidence = TIMEFRAMES.flatMap((tf) => {
    const covered = series.filter(
      (s) => s.inputs.tf === tf && s.view.live.liveSince !== null && s.view.live.candles.length > 0,
    );
    return covered.length === 0
      ? []
      : [
          timeframeConfidence(
            tf,
            TIMEFRAME_MS[tf],
            covered.map((s) => ({ symbol: s.inputs.symbol, series: s.view.live, history: s.inputs.candles })),
          ),
        ];
  });
  return { costs, series: series.map((s) => s.view), confidence };
}

/** What the live record's stored inputs depend on: the newest signal event and the newest close of any series. */
async function liveStamp(handle: DbHandle): Promise<string> {
  const [row] = await handle.rows<{ seq: Num | null; close: Num | null; n: Num }>(sql`
    SELECT (SELECT max(seq) FROM signal_events) AS seq, (SELECT max(last_closed_open_time) FROM series_state) AS close,
           (SELECT count(*) FROM series_state) AS n`);
  return `${row?.seq ?? "-"}/${row?.close ?? "-"}/${row?.n ?? 0}`;
}

/**
 * The live record per view: inputs read once per stored change, views derived per distinct cut
 * (the public cut moves only when 24 hours pass a signal's start or a close). Any process serves
 * its own copy; the stamp is read from the store, so another process's writes are seen.
 */
export class LiveRecordCache {
  private inputs: { stamp: string; value: Promise<LiveInputs[]> } | null = null;
  private readonly views = new Map<string, LiveRecordView>();
  private readonly db: DbHandle;
  constructor(db: DbHandle) {
    this.db = db;
  }

  /** The record to the last close (`now` null) or as a viewer without current access sees it at `now`. */
  async get(now: number | null): Promise<LiveRecordView> {
    const stamp = await liveStamp(this.db);
    if (this.inputs === null || this.inputs.stamp !== stamp) {
      const value = loadLiveInputs(this.db);
      this.inputs = { stamp, value };
      this.views.clear();
      value.catch(() => {
        if (this.inputs?.value === value) this.inputs = null;
      });
    }
    const inputs = await this.inputs.value;
    // A cut moves with the clock, but the view changes only when it passes an event or a close.
    const key = now === null ? "all" : inputs.map((i) => cutCounts(i, liveCutOf(i, now))).join(",");
    let view = this.views.get(key);
    if (view === undefined) {
      view = computeLiveRecord(inputs, now);
      if (this.views.size >= 4) this.views.clear();
      this.views.set(key, view);
    }
    return view;
  }
}
