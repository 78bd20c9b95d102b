import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import { readClosed } from "../../../src/engine/reading.ts";
import { runSeries } from "../../../src/engine/run-series.ts";
import { restoreState, serializeState } from "../../../src/engine/serialize.ts";
import { cloneState, createEngineState } from "../../../src/engine/state.ts";
import { stepClosed } from "../../../src/engine/step.ts";
import { ENGINE_VARIANTS } from "../../support/engine-variants.ts";
import { candleSeries } from "../../support/generated-candles.ts";

describe.each(ENGINE_VARIANTS)("state persistence ($name)", { timeout: 60_000 }, ({ params }) => {
  it("serialise → restore at any point, then continue, equals the uninterrupted fold", () => {
    fc.assert(
      fc.property(candleSeries(), fc.nat(), (candles, cut) => {
        const t = cut % (candles.length + 1);
        const first = runSeries(candles.slice(0, t), params);
        const text = serializeState(first);
        const restored = restoreState(JSON.parse(text));
        expect(restored).toEqual(first);
        expect(serializeState(restored)).toBe(text);
        for (const c of candles.slice(t)) stepClosed(restored, c);
        expect(restored).toEqual(runSeries(candles, params));
      }),
      { numRuns: 150 },
    );
  });
});

describe("state persistence", { timeout: 60_000 }, () => {
  it("cloneState is deep: stepping the clone leaves the original untouched", () => {
    fc.assert(
      fc.property(candleSeries({ minSegments: 2 }), (candles) => {
        const half = Math.floor(candles.length / 2);
        const original = runSeries(candles.slice(0, half));
        const before = serializeState(original);
        const copy = cloneState(original);
        for (const c of candles.slice(half)) stepClosed(copy, c);
        expect(serializeState(original)).toBe(before);
      }),
      { numRuns: 50 },
    );
  });

  it("restoreState rejects values that stepClosed could not have produced", () => {
    const good = JSON.parse(
      serializeState(runSeries(fc.sample(candleSeries({ minSegments: 3 }), { numRuns: 1, seed: 7 })[0] as Candle[])),
    );
    expect(() => restoreState(good)).not.toThrow();
    const bad: Array<[string, unknown]> = [
      ["null", null],
      ["array", []],
      ["version", { ...good, version: 2 }],
      ["pivot width", { ...good, pivotHalfWidth: 0 }],
      ["ring length", { ...good, highs: good.highs.slice(1) }],
      ["ring value", { ...good, lows: good.lows.map(() => "1") }],
      ["signal", { ...good, signal: "BUY" }],
      ["trend", { ...good, trend: 2 }],
      ["NONE with defense", { ...good, signal: "NONE", defense: 1 }],
      ["LONG without defense", { ...good, signal: "LONG", defense: null }],
      ["atr before warm-up", { ...createEngineState(), atr: 1 }],
      ["NaN", { ...good, lastClose: Number.NaN }],
      ["half a swing high", { ...good, swingHigh: 1, minSinceHigh: null }],
      ["break buffer", { ...good, breakBufferAtr: -1 }],
      ["trail flag", { ...good, trailDefense: "yes" }],
      ["major half-width", { ...good, majorPivotHalfWidth: 2.5 }],
      ["major trend", { ...good, majorTrend: 5 }],
    ];
    for (const [name, value] of bad) expect(() => restoreState(value), name).toThrow(TypeError);
  });

  it("a checkpoint stored before the MS-2 options existed restores as MS-1 and continues identically", () => {
    const candles = fc.sample(candleSeries({ minSegments: 3 }), { numRuns: 1, seed: 11 })[0] as Candle[];
    const half = Math.floor(candles.length / 2);
    const state = runSeries(candles.slice(0, half));
    const {
      breakBufferAtr,
      trailDefense,
      withTrendOnly,
      majorPivotHalfWidth,
      majorHigh,
      majorHighBroken,
      majorLow,
      majorLowBroken,
      majorTrend,
      ...old
    } = state;
    expect({
      breakBufferAtr,
      trailDefense,
      withTrendOnly,
      majorPivotHalfWidth,
      majorHigh,
      majorHighBroken,
      majorLow,
      majorLowBroken,
      majorTrend,
    }).toEqual({
      breakBufferAtr: 0,
      trailDefense: false,
      withTrendOnly: false,
      majorPivotHalfWidth: 0,
      majorHigh: null,
      majorHighBroken: false,
      majorLow: null,
      majorLowBroken: false,
      majorTrend: 0,
    });
    const restored = restoreState(JSON.parse(JSON.stringify(old)));
    expect(restored).toEqual(state);
    for (const c of candles.slice(half)) stepClosed(restored, c);
    expect(restored).toEqual(runSeries(candles));
  });
});

describe("input guards", () => {
  const ok: Candle = { openTime: 1_700_000_000_000, open: 10, high: 11, low: 9, close: 10.5, volume: 3 };

  it("rejects malformed candles and leaves the state untouched", () => {
    const state = runSeries([ok]);
    const before = serializeState(state);
    const bad: Candle[] = [
      { ...ok, openTime: ok.openTime + 1, high: 9.5 },
      { ...ok, openTime: ok.openTime + 1, low: 10.6 },
      { ...ok, openTime: ok.openTime + 1, low: 0, open: 0 },
      { ...ok, openTime: ok.openTime + 1, close: Number.NaN },
      { ...ok, openTime: ok.openTime + 1, high: Number.POSITIVE_INFINITY },
      { ...ok, openTime: ok.openTime + 1, volume: -1 },
      { ...ok, openTime: Number.NaN },
      ok, // replayed candle
      { ...ok, openTime: ok.openTime - 3_600_000 }, // out of order
    ];
    for (const c of bad) {
      expect(() => stepClosed(state, c), JSON.stringify(c)).toThrow(RangeError);
      expect(serializeState(state)).toBe(before);
    }
    expect(readClosed(state)?.price).toBe(10.5);
  });

  it("has no reading before the first candle, and validates parameters", () => {
    expect(readClosed(createEngineState())).toBeNull();
    expect(() => createEngineState({ pivotHalfWidth: 0 })).toThrow(RangeError);
    expect(() => createEngineState({ pivotHalfWidth: 1.5 })).toThrow(RangeError);
    expect(() => createEngineState({ atrPeriod: 0 })).toThrow(RangeError);
    expect(createEngineState()).toMatchObject({ pivotHalfWidth: 3, atrPeriod: 14 });
  });
});
