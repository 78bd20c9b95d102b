import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import type { EngineStats } from "../../support/engine-stats.ts";
import { addSeriesStats, emptyStats, headline } from "../../support/engine-stats.ts";
import type { RealTimeframe } from "../../support/real-candles.ts";
import { loadRealCandles, REAL_COINS, realCandlesAvailable } from "../../support/real-candles.ts";

describe.runIf(realCandlesAvailable)(
  "behaviour on the twelve real coins (DESIGN.md §5 figures)",
  { timeout: 60_000 },
  () => {
    // Computed lazily: vitest runs a skipped describe body too, and the data may be absent then.
    let memo: { all: EngineStats; byTf: Map<RealTimeframe, EngineStats> } | null = null;
    function stats(): { all: EngineStats; byTf: Map<RealTimeframe, EngineStats> } {
      if (memo !== null) return memo;
      const all = emptyStats();
      const byTf = new Map<RealTimeframe, EngineStats>();
      for (const tf of ["1h", "4h", "1d"] as const) {
        const s = emptyStats();
        for (const coin of REAL_COINS) {
          const candles = loadRealCandles(coin, tf) as Candle[];
          addSeriesStats(s, candles);
          addSeriesStats(all, candles);
        }
        byTf.set(tf, s);
      }
      memo = { all, byTf };
      return memo;
    }

    it("covers 495,600 readings, as DESIGN.md counts them (partial first/last 4h and 1d buckets included)", () => {
      expect(stats().all.readings).toBe(495_600);
    });

    it("is close to the published behaviour: change every ~17 candles, ~5% NONE, 35% STRONG, ~2/3 armed", () => {
      const { all, byTf } = stats();
      const h = headline(all);
      console.log("real-data stats (all)", JSON.stringify(h), JSON.stringify(all));
      for (const [tf, s] of byTf) console.log(`real-data stats (${tf})`, JSON.stringify(headline(s)));
      expect(h.candlesPerChange).toBeGreaterThan(15);
      expect(h.candlesPerChange).toBeLessThan(20);
      expect(h.nonePct).toBeGreaterThan(3);
      expect(h.nonePct).toBeLessThan(7);
      expect(h.strongPctOfChanges).toBeGreaterThan(31);
      expect(h.strongPctOfChanges).toBeLessThan(39);
      expect(h.armedPct).toBeGreaterThan(60);
      expect(h.armedPct).toBeLessThan(72);
    });

    it("holds the same shape on each timeframe separately", () => {
      for (const [tf, s] of stats().byTf) {
        const h = headline(s);
        expect(h.candlesPerChange, tf).toBeGreaterThan(12);
        expect(h.candlesPerChange, tf).toBeLessThan(25);
        expect(h.nonePct, tf).toBeLessThan(10);
        expect(h.strongPctOfChanges, tf).toBeGreaterThan(25);
        expect(h.strongPctOfChanges, tf).toBeLessThan(45);
        expect(h.armedPct, tf).toBeGreaterThan(50);
      }
    });

    // Golden totals of the shipped rules. Any rule change moves them; update docs/signals.md with them.
    it("matches the recorded totals of the shipped MS-1 rules exactly", () => {
      const { all } = stats();
      expect({
        signalChanges: all.signalChanges,
        none: all.none,
        armed: all.armed,
        breaks: all.breaks,
        strongBreaks: all.strongBreaks,
        changesToDirectional: all.changesToDirectional,
        changesToStrong: all.changesToStrong,
        invalidations: all.invalidations,
      }).toEqual({
        signalChanges: 28_649,
        none: 22_077,
        armed: 328_878,
        breaks: 34_146,
        strongBreaks: 17_012,
        changesToDirectional: 26_361,
        changesToStrong: 9_227,
        invalidations: 2_288,
      });
    });
  },
);
