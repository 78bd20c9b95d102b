import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import { runSeries } from "../../../src/engine/run-series.ts";
import { createEngineState } from "../../../src/engine/state.ts";
import { stepClosed } from "../../../src/engine/step.ts";
import { foldReadings, foldSteps } from "../../support/engine-fold.ts";
import { ENGINE_VARIANTS } from "../../support/engine-variants.ts";
import { candleSeries } from "../../support/generated-candles.ts";
import { loadRealCandles, REAL_COINS, realCandlesAvailable } from "../../support/real-candles.ts";
import { naiveSeries } from "./naive-batch.ts";

/** Shifts a series in time and price so it can follow `prefix` as an alternative future. */
function appendAfter(prefix: readonly Candle[], future: readonly Candle[]): Candle[] {
  const last = prefix[prefix.length - 1] as Candle;
  const first = future[0];
  if (first === undefined) return [...prefix];
  const dt = last.openTime + 3_600_000 - first.openTime;
  return [...prefix, ...future.map((c) => ({ ...c, openTime: c.openTime + dt }))];
}

describe.each(ENGINE_VARIANTS)("no look-ahead ($name)", { timeout: 60_000 }, ({ params }) => {
  it("the state at t from c[0..t] equals the state at t from the full series", () => {
    fc.assert(
      fc.property(candleSeries(), fc.nat(), (candles, cut) => {
        const t = cut % candles.length;
        const full = foldSteps(candles, params);
        expect(runSeries(candles.slice(0, t + 1), params)).toEqual((full[t] as (typeof full)[number]).state);
      }),
      { numRuns: 200 },
    );
  });

  it("a different future never changes the readings up to t", () => {
    fc.assert(
      fc.property(candleSeries(), candleSeries({ maxSegments: 4 }), fc.nat(), (candles, other, cut) => {
        const t = cut % candles.length;
        const alt = appendAfter(candles.slice(0, t + 1), other);
        expect(foldReadings(alt, params).slice(0, t + 1)).toEqual(foldReadings(candles, params).slice(0, t + 1));
      }),
      { numRuns: 60 },
    );
  });
});

describe("no look-ahead", { timeout: 60_000 }, () => {
  it("a different future never changes the readings up to t (engine and naive reference)", () => {
    fc.assert(
      fc.property(candleSeries(), candleSeries({ maxSegments: 4 }), fc.nat(), (candles, other, cut) => {
        const t = cut % candles.length;
        const prefix = candles.slice(0, t + 1);
        const alt = appendAfter(prefix, other);
        expect(foldReadings(alt).slice(0, t + 1)).toEqual(foldReadings(candles).slice(0, t + 1));
        // The naive reference must not peek either, or it could not vouch for the engine.
        expect(naiveSeries(alt).slice(0, t + 1)).toEqual(naiveSeries(candles).slice(0, t + 1));
      }),
      { numRuns: 60 },
    );
  });

  it.runIf(realCandlesAvailable)(
    "on every real 1h series, prefix folds equal " + "the full fold at 12 cut points each",
    () => {
      for (const coin of REAL_COINS) {
        const candles = loadRealCandles(coin, "1h") as Candle[];
        const cuts = Array.from({ length: 12 }, (_, i) => Math.floor(((i + 0.5) / 12) * candles.length));
        const full = createEngineState();
        let next = 0;
        const snapshots = new Map<number, string>();
        for (const [t, candle] of candles.entries()) {
          stepClosed(full, candle);
          if (t === cuts[next]) {
            snapshots.set(t, JSON.stringify(full));
            next++;
          }
        }
        // Re-folding from scratch is the definition of "from c[0..t]"; compare serialised states.
        for (const t of cuts) {
          expect(JSON.stringify(runSeries(candles.slice(0, t + 1))), `${coin} t=${t}`).toBe(snapshots.get(t));
        }
      }
    },
  );
});
