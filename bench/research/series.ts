/**
 * The study's inputs: the twelve real coins at 1h, 4h and 1d (built from the 1h files exactly as
 * the tests build them) and the signal events an engine variant emits on them, one per change of
 * `signalAt`, as the market store records them.
 */
import type { Candle, EngineParams } from "../../src/engine/index.ts";
import { createEngineState, stepClosed } from "../../src/engine/index.ts";
import type { TrackEvent } from "../../src/web/track-record.ts";
import type { RealCoin, RealTimeframe } from "../../test/support/real-candles.ts";
import { aggregateCandles, loadRealCandles, REAL_COINS, TIMEFRAME_MS } from "../../test/support/real-candles.ts";

/** The timeframes of the study (15m and 30m cannot be built from 1h candles). */
export const STUDY_TIMEFRAMES: readonly RealTimeframe[] = ["1h", "4h", "1d"];

/** One coin at one timeframe. */
export type Series = { readonly coin: RealCoin; readonly timeframe: RealTimeframe; readonly candles: readonly Candle[] };

/** Every coin × timeframe, using only the 1h candles opening before `before` (epoch ms). */
export function loadStudySeries(before: number): Series[] {
  const out: Series[] = [];
  for (const coin of REAL_COINS) {
    const hourly = loadRealCandles(coin, "1h");
    if (hourly === null) throw new Error("the real candles are missing (../shared/data/candles); see DESIGN.md §7");
    // Cutting the 1h data first means no 4h or 1d candle can carry a later hour into the design data.
    const visible = hourly.filter((c) => c.openTime < before);
    for (const timeframe of STUDY_TIMEFRAMES) {
      out.push({ coin, timeframe, candles: timeframe === "1h" ? visible : aggregateCandles(visible, TIMEFRAME_MS[timeframe]) });
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
      events.push({ signal: state.signal, price: candle.close, defense: state.defense, candleOpenTime: candle.openTime });
    }
  }
  return events;
}
