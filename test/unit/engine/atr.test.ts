import fc from "fast-check";
import { ATR } from "trading-signals";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import { createEngineState } from "../../../src/engine/state.ts";
import { stepClosed } from "../../../src/engine/step.ts";
import { candleSeries } from "../../support/generated-candles.ts";
import { loadRealCandles, REAL_COINS, realCandlesAvailable } from "../../support/real-candles.ts";

/** Largest relative difference between the engine's ATR and trading-signals' ATR(N) over a series. */
function maxRelativeAtrError(candles: readonly Candle[], n = 14): number {
  const state = createEngineState({ atrPeriod: n });
  const peer = new ATR(n);
  let worst = 0;
  for (const c of candles) {
    stepClosed(state, c);
    const theirs = peer.add({ high: c.high, low: c.low, close: c.close });
    if ((theirs === null) !== (state.atr === null))
      throw new Error(`ATR defined at different times (count ${state.count})`);
    if (theirs !== null && state.atr !== null) {
      const scale = Math.max(Math.abs(theirs), Number.MIN_VALUE);
      worst = Math.max(worst, Math.abs(state.atr - theirs) / scale);
    }
  }
  return worst;
}

describe("ATR equals trading-signals ATR", { timeout: 60_000 }, () => {
  it("on generated series, for N = 14 and other periods, within 1e-9 relative", () => {
    fc.assert(
      fc.property(candleSeries(), fc.constantFrom(1, 2, 5, 14, 21), (candles, n) => {
        expect(maxRelativeAtrError(candles, n)).toBeLessThan(1e-9);
      }),
      { numRuns: 200 },
    );
  });

  it.runIf(realCandlesAvailable)("on all twelve real coins at 1h, 4h and 1d, within 1e-9 relative", () => {
    let worst = 0;
    for (const coin of REAL_COINS) {
      for (const tf of ["1h", "4h", "1d"] as const) {
        worst = Math.max(worst, maxRelativeAtrError(loadRealCandles(coin, tf) as Candle[]));
      }
    }
    expect(worst).toBeLessThan(1e-9);
  });
});
