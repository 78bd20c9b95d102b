import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import { readClosed, readForming } from "../../../src/engine/reading.ts";
import type { Signal } from "../../../src/engine/signal.ts";
import { createEngineState } from "../../../src/engine/state.ts";
import { stepClosed } from "../../../src/engine/step.ts";
import { candleSeries } from "../../support/generated-candles.ts";

// The properties elsewhere are only as strong as the cases the generator produces; this pins that the
// generated series exercise every branch of the rules, so no property passes vacuously.
describe("generated series exercise every rule", { timeout: 60_000 }, () => {
  const series = fc.sample(candleSeries(), { numRuns: 300, seed: 20240616 });
  const seen = {
    signals: new Set<Signal>(),
    invalidations: 0,
    bos: 0,
    choch: 0,
    armingUp: 0,
    armingDown: 0,
    withTrend: 0,
    againstTrend: 0,
    scores: new Set<number>(),
    unconfirmedForming: 0,
    equalHighPivots: 0,
    readings: 0,
  };
  for (const candles of series) {
    const state = createEngineState();
    for (const [t, candle] of candles.entries()) {
      const trendBefore = state.trend;
      const highAtBefore = state.swingHighAt;
      if (readForming(state, candle).confirmed === false) seen.unconfirmedForming++;
      stepClosed(state, candle);
      const r = readClosed(state);
      if (r === null) throw new Error("missing reading");
      seen.readings++;
      seen.signals.add(r.signal);
      if (state.signalAt === candle.openTime) {
        if (r.signal === "NONE") seen.invalidations++;
        else if (state.trend === trendBefore) seen.bos++;
        else seen.choch++;
      }
      if (r.arming !== null) {
        if (r.arming.dir === 1) seen.armingUp++;
        else seen.armingDown++;
        if (r.arming.dir === state.trend) seen.withTrend++;
        else if (state.trend !== 0) seen.againstTrend++;
        seen.scores.add(r.arming.score);
      }
      // A new pivot whose right-hand window holds an equal high: only the non-strict rule admits it.
      if (state.swingHighAt !== highAtBefore && state.swingHighAt !== null) {
        const p = candles.findIndex((c) => c.openTime === state.swingHighAt);
        const right = candles.slice(p + 1, t + 1);
        if (right.some((c: Candle) => c.high === state.swingHigh)) seen.equalHighPivots++;
      }
    }
  }

  it("produces every signal, both break kinds and invalidations", () => {
    expect([...seen.signals].sort()).toEqual(["LONG", "NONE", "SHORT", "STRONG_LONG", "STRONG_SHORT"]);
    expect(seen.bos).toBeGreaterThan(100);
    expect(seen.choch).toBeGreaterThan(100);
    expect(seen.invalidations).toBeGreaterThan(50);
  });

  it("arms in both directions, with and against the trend, over a wide score range", () => {
    expect(seen.armingUp).toBeGreaterThan(500);
    expect(seen.armingDown).toBeGreaterThan(500);
    expect(seen.withTrend).toBeGreaterThan(100);
    expect(seen.againstTrend).toBeGreaterThan(100);
    for (let score = 1; score <= 10; score++) expect(seen.scores, `score ${score}`).toContain(score);
  });

  it("produces unconfirmed forming readings and pivots decided by the non-strict right side", () => {
    expect(seen.unconfirmedForming).toBeGreaterThan(100);
    expect(seen.equalHighPivots).toBeGreaterThan(10);
  });
});
