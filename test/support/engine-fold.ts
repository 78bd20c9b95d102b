import type { Candle } from "../../src/engine/candle.ts";
import type { EngineParams } from "../../src/engine/params.ts";
import type { Reading } from "../../src/engine/reading.ts";
import { readClosed } from "../../src/engine/reading.ts";
import type { EngineState } from "../../src/engine/state.ts";
import { cloneState, createEngineState } from "../../src/engine/state.ts";
import { stepClosed } from "../../src/engine/step.ts";

/** Per-candle output of a fold: the confirmed reading and a snapshot of the state after that candle. */
export type FoldStep = { reading: Reading; state: EngineState };

/** Folds a series, keeping every reading and state snapshot (tests only: O(n) memory). */
export function foldSteps(candles: readonly Candle[], params?: Partial<EngineParams>): FoldStep[] {
  const state = createEngineState(params);
  return candles.map((candle) => {
    stepClosed(state, candle);
    return { reading: readClosed(state) as Reading, state: cloneState(state) };
  });
}

/** Folds a series and returns only the confirmed readings (cheaper than foldSteps). */
export function foldReadings(candles: readonly Candle[], params?: Partial<EngineParams>): Reading[] {
  const state = createEngineState(params);
  return candles.map((candle) => {
    stepClosed(state, candle);
    return readClosed(state) as Reading;
  });
}
