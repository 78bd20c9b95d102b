/**
 * The study's inputs: the twelve real coins at 1h, 4h and 1d (built from the 1h files exactly as
 * the tests build them) and the signal events an engine variant emits on them, one per change of
 * `signalAt`, as the market store records them.
 */
import type { Candle, EngineParams } from "../../src/engine/index.ts";
import { createEngineState, signalDirection, stepClosed } from "../../src/engine/index.ts";
import type { TrackEvent } from "../../src/track-record/track-record.ts";
import type { RealCoin, RealTimeframe } from "../../test/support/real-candles.ts";
import { aggregateCandles, loadRealCandles, REAL_COINS, TIMEFRAME_MS } from "../../test/support/real-candles.ts";

/** The timeframes of the study (15m and 30m cannot be built from 1h candles). */
export const STUDY_TIMEFRAMES: readonly RealTimeframe[] = ["1h", "4h", "1d"];

/** One coin at one timeframe. */
export type Series = {
  readonly coin: RealCoin;
  readonly timeframe: RealTimeframe;
  readonly candles: readonly Candle[];
};

/** Every coin × timeframe, using only the 1h candles opening before `before` (epoch ms). */
export function loadStudySeries(before: number): Series[] {
  const out: Series[] = [];
  for (const coin of REAL_COINS) {
    const hourly = loadRealCandles(coin, "1h");
    if (hourly === null) throw new Error("the real candles are missing (../shared/data/candles); see DESIGN.md §7");
    // Cutting the 1h data first means no 4h or 1d candle can carry a later hour into the design data.
    const visible = hourly.filter((c) => c.openTime < before);
    for (const timeframe of STUDY_TIMEFRAMES) {
      out.push({
        coin,
        timeframe,
        candles: timeframe === "1h" ? visible : aggregateCandles(visible, TIMEFRAME_MS[timeframe]),
      });
    }
  }
  return out;
}

/** The signal events of an engine variant over a series: each change of `signalAt`, with price and defense. */
export function signalEventsOf(candles: readonly Candle[], params: Partial<EngineParams>): TrackEvent[] {
  const state = createEngineState(params);
  const events: TrackEvent[] = [];
  for (const candle of candles) {
    const before = state.signalAt;
    stepClosed(state, candle);
    if (state.signalAt !== before && state.signalAt !== null) {
      events.push({
        signal: state.signal,
        price: candle.close,
        defense: state.defense,
        candleOpenTime: candle.openTime,
      });
    }
  }
  return events;
}

/** The signal direction (1 long, −1 short, 0 none) of an engine variant after each candle of a series. */
export function signalDirectionsOf(candles: readonly Candle[], params: Partial<EngineParams>): Int8Array {
  const state = createEngineState(params);
  const directions = new Int8Array(candles.length);
  candles.forEach((candle, i) => {
    stepClosed(state, candle);
    directions[i] = signalDirection(state.signal);
  });
  return directions;
}

const DAY_MS = TIMEFRAME_MS["1d"];
const WEEK_MS = 7 * DAY_MS;
// Epoch 0 is a Thursday; weeks start on Monday 00:00 UTC (1970-01-05), as exchanges' weekly candles do.
const FIRST_MONDAY_MS = 4 * DAY_MS;

/** Weekly candles (Monday 00:00 UTC buckets) built from daily ones; a partial week at either end is kept. */
export function weeklyCandles(daily: readonly Candle[]): Candle[] {
  const out: Candle[] = [];
  for (const c of daily) {
    const week = Math.floor((c.openTime - FIRST_MONDAY_MS) / WEEK_MS) * WEEK_MS + FIRST_MONDAY_MS;
    const last = out[out.length - 1];
    if (last !== undefined && last.openTime === week) {
      out[out.length - 1] = {
        ...last,
        high: Math.max(last.high, c.high),
        low: Math.min(last.low, c.low),
        close: c.close,
        volume: last.volume + c.volume,
      };
    } else {
      out.push({ ...c, openTime: week });
    }
  }
  return out;
}
