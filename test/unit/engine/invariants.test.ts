import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import type { EngineParams } from "../../../src/engine/params.ts";
import type { Reading } from "../../../src/engine/reading.ts";
import { readClosed, readForming } from "../../../src/engine/reading.ts";
import { createEngineState } from "../../../src/engine/state.ts";
import { stepClosed } from "../../../src/engine/step.ts";
import { MS2_PARAMS } from "../../../src/engine/variants.ts";
import { ENGINE_VARIANTS } from "../../support/engine-variants.ts";
import { candleSeries } from "../../support/generated-candles.ts";
import { loadRealCandles, REAL_COINS, realCandlesAvailable } from "../../support/real-candles.ts";

/** Returns a description of the first broken invariant, or null; cheap enough for 500k readings. */
function violation(r: Reading): string | null {
  switch (r.signal) {
    case "LONG":
    case "STRONG_LONG":
      if (r.defense === null || !(r.defense < r.price)) return "long needs defense < price";
      break;
    case "SHORT":
    case "STRONG_SHORT":
      if (r.defense === null || !(r.defense > r.price)) return "short needs defense > price";
      break;
    case "NONE":
      if (r.defense !== null) return "NONE needs defense null";
      break;
  }
  const a = r.arming;
  if (a !== null) {
    if (!Number.isInteger(a.score) || a.score < 0 || a.score > 10) return "score must be an integer in 0..10";
    if (a.dir === 1 && !(a.invalidation < r.price && r.price < a.trigger))
      return "dir 1 needs invalidation < price < trigger";
    if (a.dir === -1 && !(a.trigger < r.price && r.price < a.invalidation))
      return "dir -1 needs trigger < price < invalidation";
    if (r.atrPct === null) return "no arming while ATR is undefined";
  }
  if (r.atrPct !== null && !(r.atrPct >= 0 && Number.isFinite(r.atrPct))) return "atr_pct must be finite and >= 0";
  return null;
}

/** Checks closed readings and, for each candle, the forming reading of a half-formed version of it. */
function checkSeries(candles: readonly Candle[], params: Partial<EngineParams> = {}): number {
  const state = createEngineState(params);
  let checked = 0;
  for (const [t, c] of candles.entries()) {
    // A plausible mid-candle snapshot: same open, the close halfway, extremes so far.
    const mid = (c.open + c.close) / 2;
    const forming = { ...c, high: Math.max(c.open, mid), low: Math.min(c.open, mid), close: mid };
    const f = readForming(state, forming);
    const fv = violation(f);
    if (fv !== null) throw new Error(`forming t=${t}: ${fv} ${JSON.stringify(f)}`);
    stepClosed(state, c);
    const r = readClosed(state) as Reading;
    const v = violation(r);
    if (v !== null) throw new Error(`closed t=${t}: ${v} ${JSON.stringify(r)}`);
    if ((r.atrPct === null) !== t < state.atrPeriod - 1) throw new Error(`t=${t}: ATR defined from t = N-1 exactly`);
    checked += 2;
  }
  return checked;
}

describe.each(ENGINE_VARIANTS)("reading invariants ($name)", { timeout: 60_000 }, ({ params }) => {
  it("hold on generated series (closed and forming readings)", () => {
    fc.assert(
      fc.property(candleSeries(), (candles) => {
        checkSeries(candles, params);
      }),
      { numRuns: 300 },
    );
  });
});

describe("reading invariants", { timeout: 60_000 }, () => {
  it("the checker itself rejects broken readings", () => {
    const ok: Reading = { price: 10, signal: "LONG", confirmed: true, defense: 9, arming: null, atrPct: 1 };
    expect(violation(ok)).toBeNull();
    expect(violation({ ...ok, defense: 10 })).not.toBeNull();
    expect(violation({ ...ok, signal: "SHORT" })).not.toBeNull();
    expect(violation({ ...ok, signal: "NONE" })).not.toBeNull();
    expect(violation({ ...ok, arming: { dir: 1, score: 3.5, trigger: 11, invalidation: 9 } })).not.toBeNull();
    expect(violation({ ...ok, arming: { dir: 1, score: 11, trigger: 11, invalidation: 9 } })).not.toBeNull();
    expect(violation({ ...ok, arming: { dir: -1, score: 5, trigger: 11, invalidation: 9 } })).not.toBeNull();
    expect(violation({ ...ok, arming: { dir: 1, score: 5, trigger: 11, invalidation: 9 } })).toBeNull();
  });

  it.runIf(realCandlesAvailable)("hold on all twelve real coins at 1h, 4h and 1d", () => {
    let checked = 0;
    for (const coin of REAL_COINS) {
      for (const tf of ["1h", "4h", "1d"] as const) checked += checkSeries(loadRealCandles(coin, tf) as Candle[]);
    }
    expect(checked).toBe(2 * 495_600);
  });

  it.runIf(realCandlesAvailable)("hold for MS-2 on all twelve real coins at 1h, 4h and 1d", () => {
    let checked = 0;
    for (const coin of REAL_COINS) {
      for (const tf of ["1h", "4h", "1d"] as const)
        checked += checkSeries(loadRealCandles(coin, tf) as Candle[], MS2_PARAMS[tf]);
    }
    expect(checked).toBe(2 * 495_600);
  });
});
