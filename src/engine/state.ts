import type { EngineParams } from "./params.ts";
import { resolveParams } from "./params.ts";
import type { Signal, Trend } from "./signal.ts";

/** Version tag of the persisted state layout; bump it when the shape changes. */
export const ENGINE_STATE_VERSION = 1;

/**
 * The whole MS-1 fold state after the last closed candle; plain JSON, so it round-trips through restoreState exactly.
 */
export type EngineState = {
  version: typeof ENGINE_STATE_VERSION;
  /** Pivot half-width k. */
  pivotHalfWidth: number;
  /** ATR period N. */
  atrPeriod: number;
  /** MS-2 options (params.ts); their defaults are MS-1. */
  breakBufferAtr: number;
  trailDefense: boolean;
  withTrendOnly: boolean;
  majorPivotHalfWidth: number;
  /** Number of closed candles folded so far (t + 1). */
  count: number;
  lastOpenTime: number | null;
  lastClose: number | null;
  /** Sum of the first true ranges; only meaningful while count ≤ N. */
  trSum: number;
  /** Wilder ATR, null until N candles have closed. */
  atr: number | null;
  /**
   * Ring buffers holding (at least) the last 2·max(k, K)+1 candles: length `ringSize(max(k, K))`, slot = index &
   * (length − 1).
   */
  highs: number[];
  lows: number[];
  openTimes: number[];
  /** Current swing high H (the latest confirmed pivot high), its candle's openTime and whether a close broke it. */
  swingHigh: number | null;
  swingHighAt: number | null;
  swingHighBroken: boolean;
  /** Lowest low of the candles strictly after H's candle up to the last closed candle. */
  minSinceHigh: number | null;
  swingLow: number | null;
  swingLowAt: number | null;
  swingLowBroken: boolean;
  /** Highest high of the candles strictly after L's candle up to the last closed candle. */
  maxSinceLow: number | null;
  trend: Trend;
  /** Major structure (half-width K, only when K > 0): its latest swing levels and their trend. */
  majorHigh: number | null;
  majorHighBroken: boolean;
  majorLow: number | null;
  majorLowBroken: boolean;
  majorTrend: Trend;
  signal: Signal;
  /** Level whose close-through invalidates the signal; null exactly when signal is NONE. */
  defense: number | null;
  /** openTime of the candle whose close last set `signal` (a break or an invalidation); null before any. */
  signalAt: number | null;
};

/** Ring buffer length for pivot half-width k: the smallest power of two ≥ 2k+1 (a mask beats `%`). */
export function ringSize(pivotHalfWidth: number): number {
  let size = 1;
  while (size < 2 * pivotHalfWidth + 1) size *= 2;
  return size;
}

/** A fresh state before any candle, with validated parameters (defaults k = 3, N = 14). */
export function createEngineState(params?: Partial<EngineParams>): EngineState {
  const { pivotHalfWidth, atrPeriod, breakBufferAtr, trailDefense, withTrendOnly, majorPivotHalfWidth } =
    resolveParams(params);
  const width = ringSize(Math.max(pivotHalfWidth, majorPivotHalfWidth));
  return {
    version: ENGINE_STATE_VERSION,
    pivotHalfWidth,
    atrPeriod,
    breakBufferAtr,
    trailDefense,
    withTrendOnly,
    majorPivotHalfWidth,
    count: 0,
    lastOpenTime: null,
    lastClose: null,
    trSum: 0,
    atr: null,
    highs: new Array<number>(width).fill(0),
    lows: new Array<number>(width).fill(0),
    openTimes: new Array<number>(width).fill(0),
    swingHigh: null,
    swingHighAt: null,
    swingHighBroken: false,
    minSinceHigh: null,
    swingLow: null,
    swingLowAt: null,
    swingLowBroken: false,
    maxSinceLow: null,
    trend: 0,
    majorHigh: null,
    majorHighBroken: false,
    majorLow: null,
    majorLowBroken: false,
    majorTrend: 0,
    signal: "NONE",
    defense: null,
    signalAt: null,
  };
}

/** An independent deep copy; stepping the copy never affects the original. */
export function cloneState(state: EngineState): EngineState {
  return {
    ...state,
    highs: state.highs.slice(),
    lows: state.lows.slice(),
    openTimes: state.openTimes.slice(),
  };
}
