/**
 * Track record of one coin and timeframe, computed from its stored signal events and closed
 * candles (docs/track-record.md). Pure: no I/O, no clock. Shown only on the web pages (the
 * chart pages and the public /track-record page), never through the API.
 *
 * Each directional event is a trade entered at its price (the confirmed close). It ends at the
 * first of: a later close at or through the event's own defense (exit at that close), or the
 * next event in the opposite direction or a NONE invalidation (exit at that event's price).
 * A trade with no exit yet is open: valued at the last close, left out of win rates and averages.
 */
import type { SignalName } from "../market/snapshot.ts";

export interface TrackEvent {
  readonly signal: SignalName;
  /** Close of the candle that set the signal. */
  readonly price: number;
  readonly defense: number | null;
  /** Open time (epoch ms) of that candle. */
  readonly candleOpenTime: number;
}

export interface TrackCandle {
  readonly openTime: number;
  readonly close: number;
}

export type DirectionalSignal = Exclude<SignalName, "NONE">;
export const DIRECTIONAL_SIGNALS: readonly DirectionalSignal[] = ["STRONG_LONG", "LONG", "SHORT", "STRONG_SHORT"];

export type ExitReason = "defense" | "opposite" | "invalidation" | "open";

export interface Trade {
  readonly signal: DirectionalSignal;
  readonly direction: 1 | -1;
  readonly entryTime: number;
  readonly entryPrice: number;
  readonly defense: number | null;
  /** Open time of the candle (or event) where the trade ended; for an open trade, of the last close. */
  readonly exitTime: number;
  readonly exitPrice: number;
  readonly exitReason: ExitReason;
  /** (exit − entry) / entry · 100 for longs, mirrored for shorts. */
  readonly resultPct: number;
}

export interface SignalStats {
  readonly signal: DirectionalSignal | "ALL";
  /** Trades, closed and open. */
  readonly count: number;
  readonly closed: number;
  readonly open: number;
  /** Closed trades with a result above zero. */
  readonly wins: number;
  /** wins / closed · 100; null with no closed trade. */
  readonly winRatePct: number | null;
  /** Mean result of the closed trades; null with none. */
  readonly avgResultPct: number | null;
}

export interface TrackRecord {
  readonly trades: readonly Trade[];
  readonly bySignal: readonly SignalStats[];
  readonly all: SignalStats;
}

/** 1 for long signals, -1 for short ones, 0 for NONE. */
export function directionOf(signal: SignalName): 1 | -1 | 0 {
  if (signal === "LONG" || signal === "STRONG_LONG") return 1;
  if (signal === "SHORT" || signal === "STRONG_SHORT") return -1;
  return 0;
}

/** Index of the first candle opening strictly after `time` (candles sorted by openTime). */
function firstCandleAfter(candles: readonly TrackCandle[], time: number): number {
  let lo = 0;
  let hi = candles.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (candles[mid]!.openTime <= time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function resultPct(direction: 1 | -1, entry: number, exit: number): number {
  return (direction * (exit - entry) * 100) / entry;
}

/** The trade an event opens, ended as the rules say. `events` are in time order. */
function tradeOf(events: readonly TrackEvent[], index: number, candles: readonly TrackCandle[]): Trade {
  const event = events[index]!;
  const direction = directionOf(event.signal) as 1 | -1;
  let terminal: TrackEvent | null = null;
  for (let j = index + 1; j < events.length; j++) {
    const d = directionOf(events[j]!.signal);
    if (d === 0 || d === -direction) {
      terminal = events[j]!;
      break;
    }
  }
  const base = {
    signal: event.signal as DirectionalSignal,
    direction,
    entryTime: event.candleOpenTime,
    entryPrice: event.price,
    defense: event.defense,
  };
  // The defense is checked on closes strictly after the entry candle and up to the terminal
  // event's candle; on that same candle both say the same close, and "defense" is the reason.
  if (event.defense !== null) {
    for (let k = firstCandleAfter(candles, event.candleOpenTime); k < candles.length; k++) {
      const candle = candles[k]!;
      if (terminal !== null && candle.openTime > terminal.candleOpenTime) break;
      const through = direction === 1 ? candle.close <= event.defense : candle.close >= event.defense;
      if (through)
        return {
          ...base,
          exitTime: candle.openTime,
          exitPrice: candle.close,
          exitReason: "defense",
          resultPct: resultPct(direction, event.price, candle.close),
        };
    }
  }
  if (terminal !== null) {
    const reason: ExitReason = terminal.signal === "NONE" ? "invalidation" : "opposite";
    return {
      ...base,
      exitTime: terminal.candleOpenTime,
      exitPrice: terminal.price,
      exitReason: reason,
      resultPct: resultPct(direction, event.price, terminal.price),
    };
  }
  const last = candles[candles.length - 1];
  const mark =
    last !== undefined && last.openTime > event.candleOpenTime
      ? last
      : { openTime: event.candleOpenTime, close: event.price };
  return {
    ...base,
    exitTime: mark.openTime,
    exitPrice: mark.close,
    exitReason: "open",
    resultPct: resultPct(direction, event.price, mark.close),
  };
}

function statsOf(signal: SignalStats["signal"], trades: readonly Trade[]): SignalStats {
  const closed = trades.filter((t) => t.exitReason !== "open");
  const wins = closed.filter((t) => t.resultPct > 0).length;
  return {
    signal,
    count: trades.length,
    closed: closed.length,
    open: trades.length - closed.length,
    wins,
    winRatePct: closed.length === 0 ? null : (wins * 100) / closed.length,
    avgResultPct: closed.length === 0 ? null : closed.reduce((sum, t) => sum + t.resultPct, 0) / closed.length,
  };
}

/** Trades and per-signal statistics of one series (the backtest over them is backtest.ts). */
export function computeTrackRecord(events: readonly TrackEvent[], candles: readonly TrackCandle[]): TrackRecord {
  const ordered = [...events].sort((a, b) => a.candleOpenTime - b.candleOpenTime);
  const sortedCandles = [...candles].sort((a, b) => a.openTime - b.openTime);
  const trades: Trade[] = [];
  for (let i = 0; i < ordered.length; i++) {
    if (directionOf(ordered[i]!.signal) !== 0 && ordered[i]!.price > 0) trades.push(tradeOf(ordered, i, sortedCandles));
  }
  return {
    trades,
    bySignal: DIRECTIONAL_SIGNALS.map((signal) =>
      statsOf(
        signal,
        trades.filter((t) => t.signal === signal),
      ),
    ),
    all: statsOf("ALL", trades),
  };
}
