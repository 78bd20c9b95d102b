import { describe, expect, it } from "vitest";
import { computeArming } from "../../../src/engine/arming.ts";
import type { Candle } from "../../../src/engine/candle.ts";
import type { EngineParams } from "../../../src/engine/params.ts";
import { readClosed } from "../../../src/engine/reading.ts";
import type { EngineState } from "../../../src/engine/state.ts";
import { createEngineState } from "../../../src/engine/state.ts";
import { stepClosed } from "../../../src/engine/step.ts";

const T0 = Date.UTC(2024, 0, 1);

/** Candles from [high, low, close] triples (open = previous close), one hour apart. */
function candles(rows: ReadonlyArray<readonly [number, number, number]>): Candle[] {
  let prev = rows[0]?.[2] ?? 0;
  return rows.map(([high, low, close], i) => {
    const open = Math.min(high, Math.max(low, prev));
    prev = close;
    return { openTime: T0 + i * 3_600_000, open, high, low, close, volume: 1 };
  });
}

/** States after each candle, for small hand-checked sequences (k = 1 keeps them short). */
function states(
  rows: ReadonlyArray<readonly [number, number, number]>,
  params: Partial<EngineParams> = { pivotHalfWidth: 1, atrPeriod: 2 },
): EngineState[] {
  const s = createEngineState(params);
  return candles(rows).map((c) => {
    stepClosed(s, c);
    return structuredClone(s);
  });
}

const at = (i: number): number => T0 + i * 3_600_000;

describe("pivots (left strict, right non-strict)", () => {
  it("an equal high on the right still confirms the pivot; the later equal high does not replace it", () => {
    const s = states([
      [10, 8, 9],
      [12, 9, 11],
      [12, 10, 11],
      [11, 9, 10],
    ]);
    expect(s[2]?.swingHigh).toBe(12);
    expect(s[2]?.swingHighAt).toBe(at(1));
    // Candle 2 equals candle 1 on its left, so it is not a pivot and H stays at candle 1.
    expect(s[3]?.swingHighAt).toBe(at(1));
  });

  it("no pivot is confirmed before its right window has closed or without a full left window", () => {
    const s = states(
      [
        [12, 9, 11],
        [10, 8, 9],
        [11, 9, 10],
      ],
      { pivotHalfWidth: 1, atrPeriod: 2 },
    );
    expect(s[1]?.swingHigh).toBeNull();
    expect(s[2]?.swingHigh).toBeNull(); // candle 0 has no left neighbour
    expect(s[2]?.swingLow).toBe(8);
  });
});

describe("breaks, defense and invalidation", () => {
  const rows = [
    [10, 8, 9], //    0
    [12, 9, 11], //   1  swing high H = 12
    [11, 9.5, 10], // 2  H confirmed; minSinceH = 9.5 (candle 1's own low 9 is not "since H")
    [11.5, 9, 10], // 3  minSinceH = 9
    [13, 9.8, 12.5], // 4  close 12.5 > 12: CHoCH → LONG, defense 9; candle 3 becomes L = 9
    [12.8, 11, 11.5], // 5  candle 4 becomes H = 13, minSinceH = 11
    [13.5, 12, 13.2], // 6  close > 13 with trend up: BOS → STRONG_LONG, defense min(11, 12) = 11
    [13, 10.5, 11], // 7  close = defense: NONE, trend stays up; candle 6 becomes H = 13.5
    [14, 11, 13.6], // 8  close > 13.5, trend still up: STRONG_LONG, defense min(10.5, 11) = 10.5
  ] as const;
  const s = states(rows);

  it("minSinceH covers the candles after H's candle, not H's candle itself", () => {
    expect(s[2]?.swingHigh).toBe(12);
    expect(s[2]?.minSinceHigh).toBe(9.5);
    expect(s[3]?.minSinceHigh).toBe(9);
  });

  it("a close above an unbroken H is a CHoCH (LONG) without an up trend, then a BOS (STRONG_LONG)", () => {
    expect(s.map((x) => x.signal)).toEqual([
      "NONE",
      "NONE",
      "NONE",
      "NONE",
      "LONG",
      "LONG",
      "STRONG_LONG",
      "NONE",
      "STRONG_LONG",
    ]);
    expect(s.map((x) => x.defense)).toEqual([null, null, null, null, 9, 9, 11, null, 10.5]);
    expect(s.map((x) => x.trend)).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 1]);
    expect(s[4]?.swingHighBroken).toBe(true);
    expect(s[4]?.signalAt).toBe(at(4));
    expect(s[7]?.signalAt).toBe(at(7));
  });

  it("a close equal to H is not a break, a close equal to defense invalidates", () => {
    const t = states([
      [10, 8, 9],
      [12, 9, 11],
      [11, 9.5, 10],
      [12.5, 10, 12], // close == H: no break
    ]);
    expect(t[3]?.signal).toBe("NONE");
    expect(t[3]?.swingHighBroken).toBe(false);
    expect(s[7]?.signal).toBe("NONE"); // close 11 == defense 11
  });

  it("the breaking candle's own low counts toward the defense", () => {
    const t = states([
      [10, 8, 9],
      [12, 9, 11],
      [11, 9.5, 10],
      [12.5, 7, 12.2], // sweeps below everything, closes above H
    ]);
    expect(t[3]?.signal).toBe("LONG");
    expect(t[3]?.defense).toBe(7);
  });

  it("a break is judged against the H known before the candle, then the candle may confirm a new H", () => {
    const t = states([
      [10, 8, 9],
      [12, 9, 11], //   H = 12 (confirmed at 2)
      [11, 9, 10],
      [13, 10, 11.9], // wick above H, close below: no break
      [12.5, 11, 12.2], // close > 12 breaks H; the same close confirms candle 3 as the new H = 13
    ]);
    expect(t[3]?.signal).toBe("NONE");
    expect(t[4]?.signal).toBe("LONG");
    expect(t[4]?.defense).toBe(9);
    expect(t[4]?.swingHigh).toBe(13);
    expect(t[4]?.swingHighBroken).toBe(false);
    expect(t[4]?.minSinceHigh).toBe(11);
  });

  it("bearish rules mirror the bullish ones", () => {
    const t = states(rows.map(([h, l, c]) => [100 - l, 100 - h, 100 - c] as const));
    expect(t.map((x) => x.signal)).toEqual([
      "NONE",
      "NONE",
      "NONE",
      "NONE",
      "SHORT",
      "SHORT",
      "STRONG_SHORT",
      "NONE",
      "STRONG_SHORT",
    ]);
    expect(t.map((x) => x.defense)).toEqual([null, null, null, null, 91, 91, 89, null, 89.5]);
  });
});

describe("ATR warm-up", () => {
  it("is undefined before N candles, the mean of the first N true ranges at t = N-1, Wilder after", () => {
    const rows = [
      [10, 8, 9], //   TR 2
      [12, 9, 11], //  TR max(3, 3, 0) = 3
      [11, 9.5, 10], // TR max(1.5, 0, 1.5) = 1.5
      [14, 12, 13], // TR max(2, 4, 2) = 4
    ] as const;
    const s = states(rows, { pivotHalfWidth: 1, atrPeriod: 3 });
    expect(s.map((x) => x.atr)).toEqual([null, null, (2 + 3 + 1.5) / 3, (((2 + 3 + 1.5) / 3) * 2 + 4) / 3]);
    expect(readClosed(s[1] as EngineState)?.atrPct).toBeNull();
    expect(readClosed(s[2] as EngineState)?.atrPct).toBe((100 * ((2 + 3 + 1.5) / 3)) / 10);
  });
});

describe("arming score and tie-breaks", () => {
  /** A state with both setups available around price 10 and ATR 1. */
  function setup(overrides: Partial<EngineState>): EngineState {
    return {
      ...createEngineState(),
      count: 50,
      atr: 1,
      swingHigh: 11,
      swingHighAt: 1,
      minSinceHigh: 9.5,
      swingLow: 9,
      swingLowAt: 2,
      maxSinceLow: 10.5,
      ...overrides,
    };
  }

  it("scores P + A + R with floors: distance 1 ATR → P 2, no trend → A 1, risk 1.5 ATR → R 2", () => {
    expect(computeArming(setup({ swingLow: null, maxSinceLow: null, swingLowAt: null }), 10)).toEqual({
      dir: 1,
      score: 5,
      trigger: 11,
      invalidation: 9.5,
    });
    expect(computeArming(setup({ swingLow: null, maxSinceLow: null, swingLowAt: null, trend: 1 }), 10)?.score).toBe(7);
    expect(computeArming(setup({ swingLow: null, maxSinceLow: null, swingLowAt: null, trend: -1 }), 10)?.score).toBe(4);
  });

  it("needs the trigger strictly less than 2 ATR away, an unbroken level and a defined ATR", () => {
    const upOnly = { swingLow: null, maxSinceLow: null, swingLowAt: null };
    expect(computeArming(setup({ ...upOnly, swingHigh: 12 }), 10)).toBeNull();
    expect(computeArming(setup({ ...upOnly, swingHigh: 11.99 }), 10)?.dir).toBe(1);
    expect(computeArming(setup({ ...upOnly, swingHighBroken: true }), 10)).toBeNull();
    expect(computeArming(setup({ ...upOnly, atr: null }), 10)).toBeNull();
    expect(computeArming(setup({ ...upOnly, minSinceHigh: 10 }), 10)).toBeNull();
  });

  it("a perfect tie with no trend arms nothing; the trend or the nearer trigger decides otherwise", () => {
    expect(computeArming(setup({}), 10)).toBeNull();
    expect(computeArming(setup({ trend: 1 }), 10)?.dir).toBe(1);
    expect(computeArming(setup({ trend: -1 }), 10)?.dir).toBe(-1);
    // Same score (P 3 each) but the low is nearer: 0.6 vs 0.9 ATR away.
    expect(
      computeArming(setup({ swingHigh: 10.9, swingLow: 9.4, maxSinceLow: 10.9, minSinceHigh: 9.1 }), 10),
    ).toMatchObject({ dir: -1, score: 6 });
    // Up: P 4 + A 0 + R 3 = 7; down: P 2 + A 3 + R 2 = 7 — a tie, so the trend decides.
    expect(computeArming(setup({ trend: -1, swingHigh: 10.2 }), 10)).toMatchObject({ dir: -1, score: 7 });
    // With the low's risk at 2.5 ATR (R 1) the up setup scores higher and beats the trend.
    expect(computeArming(setup({ trend: -1, swingHigh: 10.2, maxSinceLow: 11.5 }), 10)).toMatchObject({
      dir: 1,
      score: 7,
    });
  });
});
