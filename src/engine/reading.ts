import type { Arming } from "./arming.ts";
import { computeArming } from "./arming.ts";
import type { Candle } from "./candle.ts";
import type { Signal } from "./signal.ts";
import type { EngineState } from "./state.ts";
import { cloneState } from "./state.ts";
import { stepClosed } from "./step.ts";

/** What the API reports for one (coin, timeframe): the per-symbol entry minus symbol/tf. */
export type Reading = {
  price: number;
  signal: Signal;
  confirmed: boolean;
  defense: number | null;
  arming: Arming | null;
  /** 100 · ATR / price, null while ATR is undefined. */
  atrPct: number | null;
};

/** Reading of the state itself at a given price, before the confirmation flag is decided. */
function readAt(state: EngineState, price: number, confirmed: boolean): Reading {
  const atr = state.atr;
  return {
    price,
    signal: state.signal,
    confirmed,
    defense: state.defense,
    arming: computeArming(state, price),
    atrPct: atr === null ? null : (100 * atr) / price,
  };
}

/** The confirmed reading after the last closed candle, or null before any candle has closed. */
export function readClosed(state: EngineState): Reading | null {
  if (state.lastClose === null) return null;
  return readAt(state, state.lastClose, true);
}

/** Reading of `step(copy(state), forming)`, confirmed iff signal and defense match the closed state; never mutates. */
export function readForming(state: EngineState, forming: Candle): Reading {
  const next = cloneState(state);
  stepClosed(next, forming);
  const confirmed = next.signal === state.signal && next.defense === state.defense;
  return readAt(next, forming.close, confirmed);
}
