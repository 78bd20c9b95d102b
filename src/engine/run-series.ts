import type { Candle } from "./candle.ts";
import type { EngineParams } from "./params.ts";
import type { EngineState } from "./state.ts";
import { createEngineState } from "./state.ts";
import { stepClosed } from "./step.ts";

/** Folds closed candles (oldest first) into a fresh state and returns the final state. */
export function runSeries(candles: Iterable<Candle>, params?: Partial<EngineParams>): EngineState {
  const state = createEngineState(params);
  for (const candle of candles) stepClosed(state, candle);
  return state;
}
