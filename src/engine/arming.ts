import type { EngineState } from "./state.ts";

/** A setup that is close to triggering: dir 1 = a close above `trigger` would be a bullish break. */
export type Arming = {
  dir: 1 | -1;
  /** Integer 0..10: nearness (0..4) + alignment with the trend (0, 1 or 3) + tight risk (0..3). */
  score: number;
  trigger: number;
  invalidation: number;
};

/** Nearness + alignment + risk score of one candidate, as docs/signals.md "Arming" states it. */
function score(distance: number, risk: number, aligned: number, atr: number): number {
  const nearness = Math.max(0, 4 - Math.floor((2 * distance) / atr));
  const tightness = Math.max(0, 3 - Math.floor(risk / atr));
  return nearness + aligned + tightness;
}

/** The setup closest to triggering at `price`, or null (no setup, no ATR yet, or an exact tie). */
export function computeArming(state: EngineState, price: number): Arming | null {
  const atr = state.atr;
  if (atr === null) return null;
  const trend = state.trend;

  let upScore = -1;
  let upDistance = 0;
  const high = state.swingHigh;
  const minSinceHigh = state.minSinceHigh;
  if (
    high !== null &&
    minSinceHigh !== null &&
    !state.swingHighBroken &&
    minSinceHigh < price &&
    price < high &&
    high - price < 2 * atr
  ) {
    upDistance = high - price;
    upScore = score(upDistance, high - minSinceHigh, trend === 1 ? 3 : trend === 0 ? 1 : 0, atr);
  }

  let downScore = -1;
  let downDistance = 0;
  const low = state.swingLow;
  const maxSinceLow = state.maxSinceLow;
  if (
    low !== null &&
    maxSinceLow !== null &&
    !state.swingLowBroken &&
    low < price &&
    price < maxSinceLow &&
    price - low < 2 * atr
  ) {
    downDistance = price - low;
    downScore = score(downDistance, maxSinceLow - low, trend === -1 ? 3 : trend === 0 ? 1 : 0, atr);
  }

  let dir: 1 | -1 | 0;
  if (upScore !== downScore) {
    dir = upScore > downScore ? 1 : -1;
  } else if (upScore < 0) {
    dir = 0;
  } else if (trend !== 0) {
    dir = trend;
  } else if (upDistance !== downDistance) {
    dir = upDistance < downDistance ? 1 : -1;
  } else {
    // A perfect tie has no principled winner; picking a side would also break mirror symmetry.
    dir = 0;
  }

  if (dir === 1) {
    return { dir, score: upScore, trigger: high as number, invalidation: minSinceHigh as number };
  }
  if (dir === -1) {
    return { dir, score: downScore, trigger: low as number, invalidation: maxSinceLow as number };
  }
  return null;
}
