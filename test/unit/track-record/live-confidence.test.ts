/**
 * The confidence of a timeframe's live record on hand-made series: the equal-weight daily
 * portfolio (coins joining on their first day, a liquidated coin leaving), its statistics as
 * computed by hand, the long/short and regime splits, time in market, and the research's trial
 * count and Sharpe variance recomputed from docs/signal-quality.md's table.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { expectedMaximumSharpe, probabilisticSharpeRatio, sharpeSample } from "../../../src/performance/statistics.ts";
import {
  type CoveredSeries,
  DAY_MS,
  RESEARCH_TRIALS,
  timeframeConfidence,
} from "../../../src/track-record/live-confidence.ts";
import type { LiveSeries, LiveTrade } from "../../../src/track-record/live-record.ts";

const D0 = 19_000; // a UTC day number
const day = (d: number) => (D0 + d) * DAY_MS;

function trade(direction: 1 | -1, growth: number): LiveTrade {
  return {
    signal: direction === 1 ? "LONG" : "SHORT",
    direction,
    signalTime: 0,
    entryTime: 0,
    entryPrice: 1,
    exitTime: 0,
    exitPrice: 1,
    exitReason: "opposite",
    growth,
    funding: 0,
    entryIndex: 0,
    exitIndex: 1,
  };
}

/** A 1d series starting on day `from` with equity per close (long and short equity given apart). */
function series(
  from: number,
  equity: number[],
  opts: { long?: number[]; short?: number[]; exposure?: number[]; trades?: LiveTrade[] } = {},
): LiveSeries {
  return {
    liveSince: day(from),
    trades: opts.trades ?? [],
    open: null,
    candles: equity.map((_, i) => ({ openTime: day(from + i), open: 1, close: 1 })),
    equity: Float64Array.from(equity),
    longEquity: Float64Array.from(opts.long ?? equity),
    shortEquity: Float64Array.from(opts.short ?? equity.map(() => 1)),
    exposure: Uint8Array.from(opts.exposure ?? equity.map(() => 1)),
  };
}

/** Daily candles rising 1% a day from 40 days before `from` to `to` (a basket that is always "up"). */
function risingHistory(from: number, to: number) {
  const out = [];
  for (let d = from - 40; d <= to; d++) out.push({ openTime: day(d), open: 1, close: 1.01 ** (d - from + 40) });
  return out;
}

describe("timeframeConfidence", () => {
  const a: CoveredSeries = {
    symbol: "AAA",
    series: series(0, [1.1, 1.21, 1.089], {
      trades: [trade(1, 1.21), trade(-1, 0.9)],
      long: [1.1, 1.21, 1.21],
      short: [1, 1, 0.9],
      exposure: [1, 1, 0],
    }),
    history: risingHistory(0, 2),
  };
  const b: CoveredSeries = {
    symbol: "BBB",
    series: series(1, [0.9, 0.99], { trades: [trade(1, 0.99)] }),
    history: risingHistory(1, 2),
  };
  const c = timeframeConfidence("1d", DAY_MS, [a, b]);

  it(
    "averages the covered coins' daily returns, each coin from its " +
      "first day: +10%, then (+10% − 10%)/2, then (−10% + 10%)/2",
    () => {
      expect(c.coins).toBe(2);
      expect(c.from).toBe(new Date(day(0)).toISOString().slice(0, 10));
      expect(c.all.summary.periods).toBe(3);
      // Returns 0.1, 0, 0: total 10%; mean 1/30, sample sd √(((1/15)² + 2·(1/30)²)/2) = 0.0577350…, Sharpe per day
      // 0.57735…
      expect(c.all.summary.totalReturn).toBeCloseTo(0.1, 12);
      expect(c.all.summary.sharpePerPeriod).toBeCloseTo(
        1 / 30 / Math.sqrt(((1 / 15) ** 2 + 2 * (1 / 30) ** 2) / 2),
        12,
      );
      expect(c.all.summary.sharpeAnnualised).toBeCloseTo(c.all.summary.sharpePerPeriod * Math.sqrt(365), 12);
      expect(c.all.summary.maxDrawdown).toBeCloseTo(0, 12);
    },
  );

  it("splits long and short: each from its own equity, with its trades' win rate", () => {
    // Longs: A +10%, +10%, 0; B −10% then +10% → 0.1, 0, 0.05.
    expect(c.long.summary.totalReturn).toBeCloseTo(1.1 * 1.0 * 1.05 - 1, 12);
    // Shorts: A 0, 0, −10%; B flat → 0, 0, −5%.
    expect(c.short.summary.totalReturn).toBeCloseTo(-0.05, 12);
    expect(c.all.winRate).toMatchObject({ successes: 1, trials: 3 });
    expect(c.long.winRate).toMatchObject({ successes: 1, trials: 2 });
    expect(c.short.winRate).toMatchObject({ successes: 0, trials: 1 });
  });

  it(
    "puts every day in the rising regime when the basket rose " + "over the 30 days before, none in the falling one",
    () => {
      expect(c.up.periods).toBe(3);
      expect(c.down.periods).toBe(0);
      expect(c.up.totalReturn).toBeCloseTo(0.1, 12);
    },
  );

  it("measures time in market per day as the mean share of the covered coins' candles held", () => {
    // Day 0: A held (1); day 1: A and B held (1); day 2: A flat, B held (0.5) → 2.5 / 3.
    expect(c.timeInMarket).toBeCloseTo(2.5 / 3, 12);
  });

  it("deflates the Sharpe ratio by the research's trials at 1h, 4h and 1d, and gives none elsewhere", () => {
    const { trials, sharpeVariance } = RESEARCH_TRIALS["1d"]!;
    const sample = sharpeSample([0.1, 0, 0]);
    expect(c.deflated).toMatchObject({ trials: 47 });
    expect(c.deflated!.dsr).toBeCloseTo(
      probabilisticSharpeRatio(sample, expectedMaximumSharpe(sharpeVariance, trials)),
      12,
    );
    expect(c.deflated!.dsr).toBeLessThan(c.all.summary.psr);
    expect(timeframeConfidence("15m", 15 * 60_000, []).deflated).toBeNull();
  });

  it("lets a liquidated coin leave the portfolio", () => {
    const dead: CoveredSeries = { symbol: "CCC", series: series(0, [0.5, 0, 0]), history: risingHistory(0, 2) };
    const alive: CoveredSeries = { symbol: "DDD", series: series(0, [1, 1.1, 1.21]), history: risingHistory(0, 2) };
    const p = timeframeConfidence("1d", DAY_MS, [dead, alive]);
    // Day 0: (−50% + 0)/2; day 1: (−100% + 10%)/2; day 2: only DDD, +10%.
    expect(p.all.summary.totalReturn).toBeCloseTo(0.75 * 0.55 * 1.1 - 1, 12);
  });
});

describe("RESEARCH_TRIALS", () => {
  it(
    "equals the count and the per-day Sharpe variance of docs/signal-quality.md's " +
      "table of every configuration tried",
    () => {
      const doc = readFileSync(new URL("../../../docs/signal-quality.md", import.meta.url), "utf8");
      const table = doc.slice(doc.indexOf("### Every configuration tried"));
      const rows: number[][] = [];
      for (const line of table.split("\n").slice(1)) {
        const cells = line.split("|").map((x) => x.trim());
        if (!line.startsWith("| ")) {
          if (rows.length > 0) break;
          continue;
        }
        if (cells[3] === undefined || !cells[3].includes("/") || cells[1] === "configuration") continue;
        rows.push([3, 4, 5].map((i) => Number(cells[i]!.split("/")[0]) / Math.sqrt(365)));
      }
      ["1h", "4h", "1d"].forEach((tf, k) => {
        const values = rows.map((r) => r[k]!);
        const mean = values.reduce((x, y) => x + y, 0) / values.length;
        const variance = values.reduce((x, v) => x + (v - mean) ** 2, 0) / (values.length - 1);
        expect(RESEARCH_TRIALS[tf]!.trials, tf).toBe(values.length);
        expect(Math.abs(RESEARCH_TRIALS[tf]!.sharpeVariance - variance) / variance, tf).toBeLessThan(1e-4);
      });
    },
  );
});
