/**
 * The three principled candidates of docs/signal-quality.md, as rules over MS-1's own signals
 * (no new engine parameter, nothing fitted): each reads only what was known at a candle's close.
 *
 * (a) Higher timeframe agrees: hold MS-1's position only while the next timeframe up (1h → 4h,
 *     4h → 1d, 1d → 1w) points the same way after its last closed candle.
 * (b) Higher timeframe holds: the lower timeframe's break only times the entry; the position is
 *     held while the higher timeframe's signal keeps that direction, whatever the lower one does.
 * (c) Momentum regime: hold a long only while the coin's trailing return over L weeks is
 *     positive, a short only while it is negative (L = 1, 2, 3, 4: the issue's "1–4 weeks",
 *     each variant reported and counted as a trial).
 *
 * A position that a rule ends (or forbids) is closed at that close and reopened at the close
 * where the rule allows it again, if MS-1's trade is still running; every fill pays the costs.
 */
import type { Candle, EngineParams } from "../../src/engine/index.ts";
import type { TrackEvent } from "../../src/track-record/track-record.ts";
import { directionOf } from "../../src/track-record/track-record.ts";
import type { RealCoin, RealTimeframe } from "../../test/support/real-candles.ts";
import { TIMEFRAME_MS } from "../../test/support/real-candles.ts";
import type { Costs, TakenTrade, Window } from "./accounting.ts";
import { takenTrade, takeTrades, windowRange } from "./accounting.ts";
import type { Series } from "./series.ts";
import { signalDirectionsOf, signalEventsOf, weeklyCandles } from "./series.ts";

const WEEK_MS = 7 * TIMEFRAME_MS["1d"];

/** The look-backs of candidate (c), in weeks. */
export const MOMENTUM_WEEKS = [1, 2, 3, 4] as const;

/** The next timeframe up of each studied timeframe. */
export const HIGHER_TIMEFRAME: Readonly<Record<RealTimeframe, string>> = { "1h": "4h", "4h": "1d", "1d": "1w" };

/** One coin at one studied timeframe, with everything a candidate reads. */
export type CoinFrame = {
  readonly coin: RealCoin;
  readonly timeframe: RealTimeframe;
  readonly candles: readonly Candle[];
  /** MS-1's signal events. */
  readonly events: readonly TrackEvent[];
  /** The signal events of the MS-2 study's final selection for this timeframe (adopted or not). */
  readonly selectionEvents: readonly TrackEvent[];
  /**
   * Per candle: MS-1's direction on the next timeframe up after its last candle closed at or before this candle's
   * close.
   */
  readonly higherDirection: Int8Array;
  /** Per look-back in weeks, per candle: the sign of the trailing return (0 where the history is too short). */
  readonly trailingSign: ReadonlyMap<number, Int8Array>;
};

/**
 * Per lower candle, the higher series' direction after its last candle that has closed by the
 * lower candle's close (a higher candle closes at its bucket's end, so no look-ahead).
 */
export function alignHigherDirection(
  lower: readonly Candle[],
  lowerMs: number,
  higher: readonly Candle[],
  higherMs: number,
  higherDirections: Int8Array,
): Int8Array {
  const out = new Int8Array(lower.length);
  let h = -1;
  for (let k = 0; k < lower.length; k++) {
    const closeTime = lower[k]!.openTime + lowerMs;
    while (h + 1 < higher.length && higher[h + 1]!.openTime + higherMs <= closeTime) h++;
    out[k] = h < 0 ? 0 : higherDirections[h]!;
  }
  return out;
}

/**
 * Per candle, the sign of close / (the close `lookbackMs` earlier, or the last one before) − 1; 0 before the history is
 * that long.
 */
export function trailingReturnSign(candles: readonly Candle[], lookbackMs: number): Int8Array {
  const out = new Int8Array(candles.length);
  let j = -1;
  for (let k = 0; k < candles.length; k++) {
    const target = candles[k]!.openTime - lookbackMs;
    while (j + 1 < k && candles[j + 1]!.openTime <= target) j++;
    out[k] = j < 0 ? 0 : Math.sign(candles[k]!.close - candles[j]!.close);
  }
  return out;
}

/** Builds the frames of every coin and studied timeframe from the design series. */
export function buildFrames(
  series: readonly Series[],
  selection: Readonly<Record<RealTimeframe, Partial<EngineParams>>>,
): CoinFrame[] {
  const byKey = new Map(series.map((s) => [`${s.coin} ${s.timeframe}`, s]));
  const directions = new Map(series.map((s) => [`${s.coin} ${s.timeframe}`, signalDirectionsOf(s.candles, {})]));
  return series.map((s) => {
    let higher: readonly Candle[];
    let higherMs: number;
    let higherDirections: Int8Array;
    if (s.timeframe === "1d") {
      higher = weeklyCandles(s.candles);
      higherMs = WEEK_MS;
      higherDirections = signalDirectionsOf(higher, {});
    } else {
      const key = `${s.coin} ${HIGHER_TIMEFRAME[s.timeframe]}`;
      higher = byKey.get(key)!.candles;
      higherMs = TIMEFRAME_MS[HIGHER_TIMEFRAME[s.timeframe] as RealTimeframe];
      higherDirections = directions.get(key)!;
    }
    return {
      coin: s.coin,
      timeframe: s.timeframe,
      candles: s.candles,
      events: signalEventsOf(s.candles, {}),
      selectionEvents: signalEventsOf(s.candles, selection[s.timeframe]),
      higherDirection: alignHigherDirection(s.candles, TIMEFRAME_MS[s.timeframe], higher, higherMs, higherDirections),
      trailingSign: new Map(MOMENTUM_WEEKS.map((w) => [w, trailingReturnSign(s.candles, w * WEEK_MS)])),
    };
  });
}

/**
 * Keeps each trade only over the candle intervals where `allowed(direction, k)` holds at the
 * interval's opening close k (window-relative): a trade becomes one sub-trade per allowed run,
 * entered and exited at closes.
 */
export function clipTrades(
  trades: readonly TakenTrade[],
  closes: readonly number[],
  costs: Costs,
  allowed: (direction: 1 | -1, k: number) => boolean,
): TakenTrade[] {
  const out: TakenTrade[] = [];
  for (const t of trades) {
    let start = -1;
    for (let k = t.entryIndex; k < t.exitIndex; k++) {
      const ok = allowed(t.direction, k);
      if (ok && start < 0) start = k;
      if (!ok && start >= 0) {
        out.push(takenTrade(t.direction, start, k, closes, costs));
        start = -1;
      }
    }
    if (start >= 0) out.push(takenTrade(t.direction, start, t.exitIndex, closes, costs));
  }
  return out;
}

/**
 * Candidate (b): enter at a lower-timeframe break in the direction the higher timeframe points
 * to, hold while the higher timeframe keeps that direction; the window's last close ends a
 * position still held.
 */
export function higherTimeframeHoldTrades(frame: CoinFrame, window: Window, costs: Costs): TakenTrade[] {
  const { first, last } = windowRange(frame.candles, window);
  const breaks = new Map<number, number>();
  for (const e of frame.events) {
    const d = directionOf(e.signal);
    if (d !== 0 && e.candleOpenTime >= window.start && e.candleOpenTime < window.end) breaks.set(e.candleOpenTime, d);
  }
  const closes = frame.candles.slice(first, last).map((c) => c.close);
  const out: TakenTrade[] = [];
  let position: 0 | 1 | -1 = 0;
  let entry = -1;
  for (let k = 0; k < closes.length; k++) {
    const higher = frame.higherDirection[first + k]!;
    if (position !== 0 && higher !== position) {
      out.push(takenTrade(position, entry, k, closes, costs));
      position = 0;
    }
    const lowerBreak = breaks.get(frame.candles[first + k]!.openTime);
    if (position === 0 && higher !== 0 && lowerBreak === higher && k < closes.length - 1) {
      position = higher as 1 | -1;
      entry = k;
    }
  }
  if (position !== 0) out.push(takenTrade(position, entry, closes.length - 1, closes, costs));
  return out;
}

/** A rule evaluated on every coin frame of a timeframe. */
export type Candidate = {
  /** Short name used in the tables. */
  readonly name: string;
  /** "served", "selection" (the MS-2 study's), "a", "b" or "c". */
  readonly family: string;
  /** The rule in one sentence. */
  readonly rule: string;
  readonly trades: (frame: CoinFrame, window: Window, costs: Costs) => TakenTrade[];
};

function closesOf(frame: CoinFrame, window: Window): number[] {
  const { first, last } = windowRange(frame.candles, window);
  return frame.candles.slice(first, last).map((c) => c.close);
}

/** MS-1 as served: the chart pages' trades. */
export const SERVED: Candidate = {
  name: "MS-1 (served)",
  family: "served",
  rule: "every MS-1 signal, one position at a time (the chart pages' trades)",
  trades: (frame, window, costs) => takeTrades(frame.events, frame.candles, window, costs),
};

/** The MS-2 study's final selection for a timeframe, as a candidate. */
export function selectionCandidate(name: string): Candidate {
  return {
    name,
    family: "selection",
    rule: "the MS-2 study's selection on all five folds",
    trades: (frame, window, costs) => takeTrades(frame.selectionEvents, frame.candles, window, costs),
  };
}

/** The principled candidates (a), (b) and (c) with every look-back, in report order. */
export const PRINCIPLED: readonly Candidate[] = [
  {
    name: "(a) higher timeframe agrees",
    family: "a",
    rule: "hold MS-1's position only while the next timeframe up points the same way (its last closed candle)",
    trades: (frame, window, costs) => {
      const { first } = windowRange(frame.candles, window);
      return clipTrades(
        takeTrades(frame.events, frame.candles, window, costs),
        closesOf(frame, window),
        costs,
        (d, k) => frame.higherDirection[first + k] === d,
      );
    },
  },
  {
    name: "(b) higher timeframe holds",
    family: "b",
    rule: "enter on a break in the next timeframe up's direction; hold while that timeframe keeps it",
    trades: higherTimeframeHoldTrades,
  },
  ...MOMENTUM_WEEKS.map(
    (weeks): Candidate => ({
      name: `(c) ${weeks}-week momentum`,
      family: "c",
      rule: `hold longs only while the coin's ${weeks}-week return is positive, shorts only while it is negative`,
      trades: (frame, window, costs) => {
        const { first } = windowRange(frame.candles, window);
        const sign = frame.trailingSign.get(weeks)!;
        return clipTrades(
          takeTrades(frame.events, frame.candles, window, costs),
          closesOf(frame, window),
          costs,
          (d, k) => sign[first + k] === d,
        );
      },
    }),
  ),
];
