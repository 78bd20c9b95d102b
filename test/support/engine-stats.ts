import type { Candle } from "../../src/engine/candle.ts";
import { readClosed } from "../../src/engine/reading.ts";
import type { Signal } from "../../src/engine/signal.ts";
import { createEngineState } from "../../src/engine/state.ts";
import { stepClosed } from "../../src/engine/step.ts";

/** Counts over the closed readings of one or more series, as DESIGN.md §5 quotes them. */
export type EngineStats = {
  readings: number;
  /** Readings whose signal differs from the previous reading's. */
  signalChanges: number;
  none: number;
  armed: number;
  /** Every bullish or bearish break, including a BOS that repeats the current STRONG signal. */
  breaks: number;
  strongBreaks: number;
  /** Changes into a directional signal (the break count DESIGN.md's "35% STRONG" uses). */
  changesToDirectional: number;
  changesToStrong: number;
  invalidations: number;
  bySignal: Record<Signal, number>;
};

/** Empty counters, ready to be filled by `addSeriesStats`. */
export function emptyStats(): EngineStats {
  return {
    readings: 0,
    signalChanges: 0,
    none: 0,
    armed: 0,
    breaks: 0,
    strongBreaks: 0,
    changesToDirectional: 0,
    changesToStrong: 0,
    invalidations: 0,
    bySignal: { NONE: 0, LONG: 0, STRONG_LONG: 0, SHORT: 0, STRONG_SHORT: 0 },
  };
}

/** Folds one series from scratch and adds its counts to `into`. */
export function addSeriesStats(into: EngineStats, candles: readonly Candle[]): EngineStats {
  const state = createEngineState();
  for (const candle of candles) {
    const before = state.signal;
    stepClosed(state, candle);
    const r = readClosed(state);
    if (r === null) throw new Error("no reading after a closed candle");
    const changedHere = state.signalAt === candle.openTime;
    into.readings++;
    into.bySignal[r.signal]++;
    if (r.signal === "NONE") into.none++;
    if (r.arming !== null) into.armed++;
    if (changedHere && r.signal === "NONE") into.invalidations++;
    if (changedHere && r.signal !== "NONE") {
      into.breaks++;
      if (r.signal === "STRONG_LONG" || r.signal === "STRONG_SHORT") into.strongBreaks++;
    }
    if (r.signal !== before) {
      into.signalChanges++;
      if (r.signal !== "NONE") {
        into.changesToDirectional++;
        if (r.signal === "STRONG_LONG" || r.signal === "STRONG_SHORT") into.changesToStrong++;
      }
    }
  }
  return into;
}

/** The four headline ratios: candles per signal change, NONE share, STRONG share, armed share. */
export function headline(s: EngineStats): {
  candlesPerChange: number;
  nonePct: number;
  strongPctOfChanges: number;
  strongPctOfAllBreaks: number;
  armedPct: number;
} {
  return {
    candlesPerChange: s.readings / s.signalChanges,
    nonePct: (100 * s.none) / s.readings,
    strongPctOfChanges: (100 * s.changesToStrong) / s.changesToDirectional,
    strongPctOfAllBreaks: (100 * s.strongBreaks) / s.breaks,
    armedPct: (100 * s.armed) / s.readings,
  };
}
