import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import type { EngineParams } from "../../../src/engine/params.ts";
import { foldSteps } from "../../support/engine-fold.ts";
import { ENGINE_VARIANTS } from "../../support/engine-variants.ts";
import { candleSeries } from "../../support/generated-candles.ts";
import type { RealCoin, RealTimeframe } from "../../support/real-candles.ts";
import { loadRealCandles, realCandlesAvailable } from "../../support/real-candles.ts";
import { naiveSeries } from "./naive-batch.ts";

/** Asserts the engine and the naive reference agree on every reading and every structural field. */
function expectAgreement(candles: readonly Candle[], params: Partial<EngineParams> = {}): void {
  const steps = foldSteps(candles, params);
  const naive = naiveSeries(candles, params.pivotHalfWidth ?? 3, params.atrPeriod ?? 14, params);
  for (let t = 0; t < candles.length; t++) {
    const { reading, state } = steps[t] as (typeof steps)[number];
    const ref = naive[t] as (typeof naive)[number];
    const at = `t=${t}`;
    expect({ at, ...reading }).toEqual({
      at,
      price: ref.price,
      signal: ref.signal,
      confirmed: true,
      defense: ref.defense,
      arming: ref.arming,
      atrPct: ref.atrPct,
    });
    expect({ at, atr: state.atr, trend: state.trend }).toEqual({ at, atr: ref.atr, trend: ref.trend });
    expect({
      at,
      h: state.swingHigh,
      hAt: state.swingHighAt,
      hBroken: state.swingHigh === null ? false : state.swingHighBroken,
      minSinceHigh: state.minSinceHigh,
      l: state.swingLow,
      lAt: state.swingLowAt,
      lBroken: state.swingLow === null ? false : state.swingLowBroken,
      maxSinceLow: state.maxSinceLow,
    }).toEqual({
      at,
      h: ref.swingHigh,
      hAt: ref.swingHighIndex === null ? null : (candles[ref.swingHighIndex] as Candle).openTime,
      hBroken: ref.swingHighBroken,
      minSinceHigh: ref.minSinceHigh,
      l: ref.swingLow,
      lAt: ref.swingLowIndex === null ? null : (candles[ref.swingLowIndex] as Candle).openTime,
      lBroken: ref.swingLowBroken,
      maxSinceLow: ref.maxSinceLow,
    });
  }
}

describe.each(ENGINE_VARIANTS.filter((v) => Object.keys(v.params).length > 0))(
  "incremental $name equals " + "the naive batch reference",
  { timeout: 60_000 },
  ({ params }) => {
    it("on generated series", () => {
      fc.assert(
        fc.property(candleSeries(), (candles) => {
          expectAgreement(candles, params);
        }),
        { numRuns: 100 },
      );
    });

    it.runIf(realCandlesAvailable)("on a real 4h slice (SOL, 700 candles)", () => {
      expectAgreement((loadRealCandles("SOL", "4h") as Candle[]).slice(2_000, 2_700), params);
    });
  },
);

describe("incremental engine equals the naive batch reference, one MS-2 option at a time", { timeout: 60_000 }, () => {
  it.each([{ breakBufferAtr: 0.25 }, { trailDefense: true }, { withTrendOnly: true }, { majorPivotHalfWidth: 5 }])(
    "on generated series with only %o",
    (option) => {
      fc.assert(
        fc.property(candleSeries(), (candles) => {
          expectAgreement(candles, option);
        }),
        { numRuns: 60 },
      );
    },
  );
});

describe("incremental engine equals the naive batch reference", { timeout: 60_000 }, () => {
  it("on generated series (k = 3, N = 14)", () => {
    fc.assert(
      fc.property(candleSeries(), (candles) => {
        expectAgreement(candles);
      }),
      { numRuns: 150 },
    );
  });

  it("on generated series with other parameters", () => {
    fc.assert(
      fc.property(
        candleSeries({ maxSegments: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 30 }),
        (candles, pivotHalfWidth, atrPeriod) => {
          expectAgreement(candles, { pivotHalfWidth, atrPeriod });
        },
      ),
      { numRuns: 80 },
    );
  });

  // Slices from different years, coins and timeframes; the naive reference is quadratic, so slices stay short.
  const slices: Array<[RealCoin, RealTimeframe, number, number]> = [
    ["BTC", "1h", 0, 700],
    ["ETH", "1h", 12_000, 700],
    ["DOGE", "1h", 4_000, 700],
    ["SOL", "4h", 2_000, 700],
    ["XRP", "1d", 0, 700],
    ["MATIC", "1d", 600, 700],
  ];
  describe.runIf(realCandlesAvailable)("on real data slices", () => {
    it.each(slices)("%s %s from candle %i (%i candles)", (coin, tf, from, length) => {
      const candles = (loadRealCandles(coin, tf) as Candle[]).slice(from, from + length);
      expect(candles).toHaveLength(length);
      expectAgreement(candles);
    });
  });
});
