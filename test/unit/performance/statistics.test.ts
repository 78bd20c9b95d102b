import { describe, expect, it } from "vitest";
import { normalCdf } from "../../../src/performance/normal.ts";
import {
  annualisedVolatility,
  annualiseSharpe,
  compoundedReturn,
  deflatedSharpeRatio,
  EULER_MASCHERONI,
  expectedMaximumSharpe,
  kurtosis,
  maxDrawdown,
  mean,
  probabilisticSharpeRatio,
  sharpeRatio,
  sharpeSample,
  skewness,
  standardDeviation,
  summarizeReturns,
  timeInMarket,
  winRate,
} from "../../../src/performance/statistics.ts";
import { seededNormal, seededUniform } from "../../support/seeded-random.ts";

// Four periods worked by hand: mean 0.025; deviations ±0.075, ±0.005.
const FOUR = [0.1, -0.05, 0.02, 0.03];
const SUM_SQUARES = 2 * 0.075 ** 2 + 2 * 0.005 ** 2; // 0.0113
const SD = Math.sqrt(SUM_SQUARES / 3); // 0.0613732…
const SR = 0.025 / SD; // 0.407344…
const M2 = SUM_SQUARES / 4;
const M4 = (2 * 0.075 ** 4 + 2 * 0.005 ** 4) / 4;

describe("moments, return, volatility and Sharpe ratio (hand-computed)", () => {
  it("takes the sample mean, the n − 1 standard deviation and the moment skewness / kurtosis", () => {
    expect(mean(FOUR)).toBeCloseTo(0.025, 15);
    expect(standardDeviation(FOUR)).toBeCloseTo(0.0613732, 7);
    // The deviations are symmetric: m3 = 0.
    expect(skewness(FOUR)).toBeCloseTo(0, 12);
    expect(kurtosis(FOUR)).toBeCloseTo(M4 / (M2 * M2), 12);
    expect(kurtosis(FOUR)).toBeCloseTo(1.9823792, 6);
    // An asymmetric sample: 0, 0, 3 has mean 1, m2 = 2, m3 = 2, m4 = 6.
    expect(skewness([0, 0, 3])).toBeCloseTo(2 / 2 ** 1.5, 12);
    expect(kurtosis([0, 0, 3])).toBeCloseTo(6 / 4, 12);
  });

  it("compounds, annualises and measures the Sharpe ratio per period and per year", () => {
    expect(compoundedReturn(FOUR)).toBeCloseTo(1.1 * 0.95 * 1.02 * 1.03 - 1, 15); // +9.7877%
    expect(sharpeRatio(FOUR)).toBeCloseTo(SR, 12);
    expect(sharpeRatio(FOUR)).toBeCloseTo(0.407344, 6);
    expect(annualiseSharpe(SR, 365)).toBeCloseTo(SR * Math.sqrt(365), 12);
    expect(annualisedVolatility(FOUR, 12)).toBeCloseTo(SD * Math.sqrt(12), 12);
  });

  it("has no Sharpe ratio, skewness or kurtosis without variation or with one period", () => {
    expect(sharpeRatio([0.01, 0.01, 0.01])).toBeNaN();
    expect(sharpeRatio([0.01])).toBeNaN();
    expect(skewness([1, 1])).toBeNaN();
    expect(kurtosis([])).toBeNaN();
    expect(mean([])).toBeNaN();
    expect(probabilisticSharpeRatio(sharpeSample([0.01, 0.01]))).toBeNaN();
  });

  it("measures the deepest fall from a peak of the compounded equity", () => {
    // Equity 1.1, 1.045, 1.0659, 1.097877: peak 1.1, trough 1.045.
    expect(maxDrawdown(FOUR)).toBeCloseTo(0.05, 15);
    // Two falls: 1 → 0.5 (−50%), back to 1.5, then to 0.6 (−60%).
    expect(maxDrawdown([-0.5, 2, -0.6])).toBeCloseTo(0.6, 15);
    expect(maxDrawdown([0.1, 0.2])).toBe(0);
    expect(maxDrawdown([])).toBe(0);
  });

  it("averages exposures into time in market and refuses exposures outside 0..1", () => {
    expect(timeInMarket([1, 0, 0.5, 0.5])).toBe(0.5);
    expect(() => timeInMarket([1.5])).toThrow(RangeError);
    expect(() => timeInMarket([-0.1])).toThrow(RangeError);
  });

  it("summarises a series with every figure", () => {
    const s = summarizeReturns(FOUR, 365);
    expect(s).toMatchObject({ periods: 4, totalReturn: compoundedReturn(FOUR), maxDrawdown: maxDrawdown(FOUR) });
    expect(s.sharpeAnnualised).toBeCloseTo(SR * Math.sqrt(365), 12);
    expect(s.annualisedVolatility).toBeCloseTo(SD * Math.sqrt(365), 12);
    expect(s.psr).toBe(probabilisticSharpeRatio(sharpeSample(FOUR), 0));
  });
});

describe("probabilistic Sharpe ratio", () => {
  it("matches the formula worked by hand", () => {
    // z = SR·√3 / √(1 − 0·SR + ((γ4 − 1)/4)·SR²)
    const z = (SR * Math.sqrt(3)) / Math.sqrt(1 + ((M4 / (M2 * M2) - 1) / 4) * SR * SR);
    expect(z).toBeCloseTo(0.69159, 5);
    expect(probabilisticSharpeRatio(sharpeSample(FOUR), 0)).toBeCloseTo(normalCdf(z), 15);
    expect(probabilisticSharpeRatio(sharpeSample(FOUR), 0)).toBeCloseTo(0.75541, 4);
    // Against a benchmark equal to the estimate the probability is one half.
    expect(probabilisticSharpeRatio(sharpeSample(FOUR), SR)).toBeCloseTo(0.5, 15);
  });

  it("falls with negative skewness and fat tails, and rises with the track record's length", () => {
    const base = { sharpe: 0.1, count: 250, skewness: 0, kurtosis: 3 };
    const p = probabilisticSharpeRatio(base);
    expect(probabilisticSharpeRatio({ ...base, skewness: -2 })).toBeLessThan(p);
    expect(probabilisticSharpeRatio({ ...base, kurtosis: 10 })).toBeLessThan(p);
    expect(probabilisticSharpeRatio({ ...base, count: 1000 })).toBeGreaterThan(p);
  });

  it("is calibrated (Monte Carlo): with true Sharpe 0, PSR > 0.95 about 5% of the time", () => {
    const z = seededNormal(1);
    let hits = 0;
    for (let r = 0; r < 4000; r++) {
      const returns = Array.from({ length: 250 }, () => 0.01 * z());
      if (probabilisticSharpeRatio(sharpeSample(returns)) > 0.95) hits++;
    }
    expect(hits / 4000).toBeGreaterThan(0.04);
    expect(hits / 4000).toBeLessThan(0.06);
  });

  it("stays calibrated on skewed, fat-tailed returns where ignoring the moments would not (Monte Carlo)", () => {
    // r = 0.15 − (E − 1), E exponential: true Sharpe 0.15, skewness −2, kurtosis 9.
    const uniform = seededUniform(2);
    let corrected = 0;
    let naive = 0;
    for (let r = 0; r < 4000; r++) {
      const returns = Array.from({ length: 250 }, () => 0.15 - (-Math.log(1 - uniform()) - 1));
      const sample = sharpeSample(returns);
      if (probabilisticSharpeRatio(sample, 0.15) > 0.95) corrected++;
      if (probabilisticSharpeRatio({ ...sample, skewness: 0, kurtosis: 3 }, 0.15) > 0.95) naive++;
    }
    expect(corrected / 4000).toBeGreaterThan(0.04);
    expect(corrected / 4000).toBeLessThan(0.065);
    expect(naive / 4000).toBeGreaterThan(0.08);
  });
});

describe("deflated Sharpe ratio", () => {
  it("reproduces the numerical example of Bailey & López de Prado (2014)", () => {
    // 100 independent trials whose annualised Sharpe ratios vary with variance 1/2; the best has an
    // annualised SR of 2.5 over 1250 daily returns (5 years of 250 days), skewness −3, kurtosis 10.
    // The paper reports SR* ≈ 0.1132 (non-annualised) and DSR ≈ 0.9004.
    const benchmark = expectedMaximumSharpe(0.5 / 250, 100);
    expect(benchmark).toBeCloseTo(0.1132, 4);
    const dsr = probabilisticSharpeRatio(
      { sharpe: 2.5 / Math.sqrt(250), count: 1250, skewness: -3, kurtosis: 10 },
      benchmark,
    );
    expect(dsr).toBeCloseTo(0.9004, 4);
  });

  it("computes SR* from the trials' own Sharpe ratios (variance n − 1) and the Euler–Mascheroni constant", () => {
    expect(EULER_MASCHERONI).toBeCloseTo(0.5772156649015329, 16);
    const trials = [0.01, 0.03, 0.05, 0.02];
    const variance = standardDeviation(trials) ** 2; // 2.9167e-4
    const candidate = { sharpe: 0.05, count: 500, skewness: -0.5, kurtosis: 5 };
    const result = deflatedSharpeRatio(candidate, trials);
    expect(result.trials).toBe(4);
    expect(result.trialsVariance).toBeCloseTo(variance, 15);
    expect(result.benchmark).toBeCloseTo(expectedMaximumSharpe(variance, 4), 15);
    expect(result.dsr).toBeCloseTo(probabilisticSharpeRatio(candidate, result.benchmark), 15);
    // More trials with the same spread raise the bar and lower the DSR.
    expect(expectedMaximumSharpe(variance, 40)).toBeGreaterThan(result.benchmark);
  });

  it("approximates the expected maximum of N standard normals (Monte Carlo, N = 100)", () => {
    const z = seededNormal(3);
    let sum = 0;
    for (let r = 0; r < 20000; r++) {
      let best = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < 100; i++) best = Math.max(best, z());
      sum += best;
    }
    // The approximation (2.5306) is known to sit about 1% above the true value (2.5076).
    expect(expectedMaximumSharpe(1, 100) / (sum / 20000)).toBeGreaterThan(1);
    expect(expectedMaximumSharpe(1, 100) / (sum / 20000)).toBeLessThan(1.02);
  });

  it("rejects the best of 20 skill-less strategies that the plain PSR would accept (Monte Carlo)", () => {
    const z = seededNormal(4);
    let deflatedPasses = 0;
    let plainPasses = 0;
    for (let r = 0; r < 500; r++) {
      const trials = Array.from({ length: 20 }, () => Array.from({ length: 250 }, () => 0.01 * z()));
      const sharpes = trials.map(sharpeRatio);
      const best = sharpes.indexOf(Math.max(...sharpes));
      const sample = sharpeSample(trials[best]!);
      if (deflatedSharpeRatio(sample, sharpes).dsr > 0.95) deflatedPasses++;
      if (probabilisticSharpeRatio(sample) > 0.95) plainPasses++;
    }
    expect(plainPasses / 500).toBeGreaterThan(0.5);
    expect(deflatedPasses / 500).toBeLessThan(0.05);
  });

  it("refuses fewer than two trials and trials without a Sharpe ratio", () => {
    expect(() => expectedMaximumSharpe(1, 1)).toThrow(RangeError);
    expect(() => expectedMaximumSharpe(-1, 10)).toThrow(RangeError);
    expect(() => deflatedSharpeRatio({ sharpe: 0.1, count: 10, skewness: 0, kurtosis: 3 }, [0.1, Number.NaN])).toThrow(
      RangeError,
    );
  });
});

describe("win rate with its Wilson 95% interval", () => {
  // Newcombe, "Two-sided confidence intervals for the single proportion: comparison of seven
  // methods", Statistics in Medicine 17 (1998): the worked examples, method 3 (Wilson score).
  it.each([
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0, 0.1611],
    [1, 29, 0.0061, 0.1718],
  ])("%i of %i: %f – %f (Newcombe 1998)", (wins, trades, low, high) => {
    const w = winRate(wins, trades);
    expect(w.rate).toBeCloseTo(wins / trades, 15);
    expect(w.low).toBeCloseTo(low, 4);
    expect(w.high).toBeCloseTo(high, 4);
  });

  it("matches the interval worked by hand and stays inside [0, 1]", () => {
    // 8 of 10, z = 1.96: centre (0.8 + 0.19208) / 1.38416, half-width 1.96/1.38416·√(0.016 + 0.009604).
    const w = winRate(8, 10, 1.96);
    expect(w.low).toBeCloseTo((0.99208 - 1.96 * Math.sqrt(0.025604)) / 1.38416, 12);
    expect(w.high).toBeCloseTo((0.99208 + 1.96 * Math.sqrt(0.025604)) / 1.38416, 12);
    expect(winRate(10, 10).high).toBe(1);
    expect(winRate(0, 10).low).toBe(0);
  });

  it("has no rate without trades and refuses impossible counts", () => {
    expect(winRate(0, 0).rate).toBeNaN();
    for (const [s, n] of [
      [3, 2],
      [-1, 2],
      [1.5, 3],
    ] as const) {
      expect(() => winRate(s, n)).toThrow(RangeError);
    }
  });
});
