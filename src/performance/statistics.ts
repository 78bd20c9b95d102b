/**
 * Performance statistics of a series of periodic portfolio returns (simple returns, 0.01 = +1%),
 * with their statistical confidence. Pure: numbers in, numbers out; no I/O, no clock.
 *
 * Conventions (stated on every page that shows these figures):
 * - Sharpe ratio = mean / sample standard deviation (n − 1) of the per-period returns, with a zero
 *   risk-free rate (the returns are already the strategy's excess over holding cash), first per
 *   period and then annualised by √(periods per year), which assumes independent periods.
 * - Skewness γ3 and kurtosis γ4 are the moment estimators m3 / m2^1.5 and m4 / m2² (population
 *   moments of the sample; γ4 is the plain kurtosis, 3 for a normal distribution), as in Bailey &
 *   López de Prado's own code. With them the PSR's radicand is never negative, because
 *   γ4 ≥ 1 + γ3² holds for any sample.
 * - PSR and DSR follow D. H. Bailey and M. López de Prado, "The Sharpe Ratio Efficient Frontier",
 *   Journal of Risk 15(2), 2012, and "The Deflated Sharpe Ratio: Correcting for Selection Bias,
 *   Backtest Overfitting and Non-Normality", Journal of Portfolio Management 40(5), 2014. Both use
 *   the per-period (not annualised) Sharpe ratio.
 */
import { normalCdf, normalQuantile } from "./normal.ts";

/** γ, the Euler–Mascheroni constant. */
export const EULER_MASCHERONI = 0.5772156649015329;

/** z with Φ(z) = 0.975: the two-sided 95% normal quantile. */
export const Z_95 = normalQuantile(0.975);

/** Arithmetic mean; NaN for an empty list. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Sum of (v − mean)^power. */
function centralSum(values: readonly number[], power: number): number {
  const m = mean(values);
  let sum = 0;
  for (const v of values) sum += (v - m) ** power;
  return sum;
}

/** Sample standard deviation (n − 1 in the denominator); NaN with fewer than two values. */
export function standardDeviation(values: readonly number[]): number {
  if (values.length < 2) return Number.NaN;
  return Math.sqrt(centralSum(values, 2) / (values.length - 1));
}

/** Skewness γ3 = m3 / m2^1.5 (moment estimator); NaN with fewer than two values or no variation. */
export function skewness(values: readonly number[]): number {
  const n = values.length;
  const m2 = centralSum(values, 2) / n;
  if (n < 2 || m2 === 0) return Number.NaN;
  return centralSum(values, 3) / n / m2 ** 1.5;
}

/** Kurtosis γ4 = m4 / m2² (moment estimator, not excess: 3 for a normal distribution); NaN as for skewness. */
export function kurtosis(values: readonly number[]): number {
  const n = values.length;
  const m2 = centralSum(values, 2) / n;
  if (n < 2 || m2 === 0) return Number.NaN;
  return centralSum(values, 4) / n / (m2 * m2);
}

/** Compounded return of the whole series: Π(1 + r) − 1. */
export function compoundedReturn(returns: readonly number[]): number {
  let growth = 1;
  for (const r of returns) growth *= 1 + r;
  return growth - 1;
}

/** Volatility: the per-period sample standard deviation scaled by √(periods per year). */
export function annualisedVolatility(returns: readonly number[], periodsPerYear: number): number {
  return standardDeviation(returns) * Math.sqrt(periodsPerYear);
}

/**
 * Per-period Sharpe ratio: mean / sample standard deviation; NaN when it is undefined (fewer than two returns or no
 * variation).
 */
export function sharpeRatio(returns: readonly number[]): number {
  const sd = standardDeviation(returns);
  return sd > 0 ? mean(returns) / sd : Number.NaN;
}

/** A per-period Sharpe ratio annualised by √(periods per year). */
export function annualiseSharpe(perPeriod: number, periodsPerYear: number): number {
  return perPeriod * Math.sqrt(periodsPerYear);
}

/** What the PSR needs to know about a return series. */
export type SharpeSample = {
  /** Per-period Sharpe ratio. */
  readonly sharpe: number;
  /** Number of returns. */
  readonly count: number;
  readonly skewness: number;
  /** Plain (non-excess) kurtosis. */
  readonly kurtosis: number;
};

/** The sample statistics of a return series that the PSR and DSR use. */
export function sharpeSample(returns: readonly number[]): SharpeSample {
  return {
    sharpe: sharpeRatio(returns),
    count: returns.length,
    skewness: skewness(returns),
    kurtosis: kurtosis(returns),
  };
}

/**
 * Probabilistic Sharpe ratio: the probability that the true per-period Sharpe ratio exceeds
 * `benchmark`, PSR(SR*) = Φ((SR − SR*)·√(n − 1) / √(1 − γ3·SR + ((γ4 − 1)/4)·SR²)).
 * NaN when the sample has no Sharpe ratio (fewer than two returns or no variation).
 */
export function probabilisticSharpeRatio(sample: SharpeSample, benchmark = 0): number {
  const { sharpe, count, skewness: g3, kurtosis: g4 } = sample;
  if (!Number.isFinite(sharpe) || count < 2) return Number.NaN;
  const radicand = 1 - g3 * sharpe + ((g4 - 1) / 4) * sharpe * sharpe;
  // Only a two-valued sample reaches 0 here (γ4 = 1 + γ3²); the estimate is then exact.
  if (radicand <= 0) return sharpe > benchmark ? 1 : sharpe < benchmark ? 0 : 0.5;
  return normalCdf(((sharpe - benchmark) * Math.sqrt(count - 1)) / Math.sqrt(radicand));
}

/**
 * The expected maximum of `trials` per-period Sharpe ratios whose true value is 0 and whose
 * estimates have variance `variance` across the trials (the false-strategy benchmark SR* of the
 * DSR): √V·((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e))). Defined for N ≥ 2.
 */
export function expectedMaximumSharpe(variance: number, trials: number): number {
  if (!Number.isInteger(trials) || trials < 2)
    throw new RangeError(`the number of trials must be an integer ≥ 2, got ${trials}`);
  if (!(variance >= 0)) throw new RangeError(`the variance of the trials' Sharpe ratios must be ≥ 0, got ${variance}`);
  const z =
    (1 - EULER_MASCHERONI) * normalQuantile(1 - 1 / trials) +
    EULER_MASCHERONI * normalQuantile(1 - 1 / (trials * Math.E));
  return Math.sqrt(variance) * z;
}

/** The DSR of one candidate and the figures it rests on. */
export type DeflatedSharpe = {
  /** Number of configurations tried, the candidate included. */
  readonly trials: number;
  /** Sample variance (n − 1) of the trials' per-period Sharpe ratios. */
  readonly trialsVariance: number;
  /** SR*: the per-period Sharpe ratio the best of `trials` skill-less trials would show on average. */
  readonly benchmark: number;
  /** PSR(SR*): the probability that the candidate's true Sharpe ratio exceeds SR*. */
  readonly dsr: number;
};

/**
 * Deflated Sharpe ratio of a candidate chosen among trials: PSR(SR*) with SR* the expected
 * maximum Sharpe ratio of `trialSharpes.length` skill-less trials (every configuration tried,
 * the candidate included, each measured on the same data as the candidate).
 */
export function deflatedSharpeRatio(candidate: SharpeSample, trialSharpes: readonly number[]): DeflatedSharpe {
  if (trialSharpes.some((s) => !Number.isFinite(s))) throw new RangeError("every trial needs a finite Sharpe ratio");
  const trials = trialSharpes.length;
  const sd = standardDeviation(trialSharpes);
  const trialsVariance = sd * sd;
  const benchmark = expectedMaximumSharpe(trialsVariance, trials);
  return { trials, trialsVariance, benchmark, dsr: probabilisticSharpeRatio(candidate, benchmark) };
}

/** Largest fall of the compounded equity Π(1 + r) from an earlier peak (starting at 1), as a fraction in [0, 1]. */
export function maxDrawdown(returns: readonly number[]): number {
  let equity = 1;
  let peak = 1;
  let worst = 0;
  for (const r of returns) {
    equity *= 1 + r;
    if (equity > peak) peak = equity;
    else worst = Math.max(worst, 1 - equity / peak);
  }
  return worst;
}

/**
 * Time in market: the mean of per-period exposures (each the fraction of the period, or of the capital, in a position,
 * 0..1).
 */
export function timeInMarket(exposures: readonly number[]): number {
  if (exposures.some((e) => !(e >= 0 && e <= 1))) throw new RangeError("an exposure must be between 0 and 1");
  return mean(exposures);
}

/** A proportion with its confidence interval. */
export type Proportion = {
  readonly successes: number;
  readonly trials: number;
  readonly rate: number;
  readonly low: number;
  readonly high: number;
};

/**
 * A success rate (e.g. the win rate) with its Wilson score interval (E. B. Wilson, "Probable
 * Inference, the Law of Succession, and Statistical Inference", JASA 22, 1927), 95% by default.
 * Unlike the normal approximation it stays inside [0, 1] and is usable for few trials or a rate
 * near 0 or 1. NaN rate and bounds with no trial.
 */
export function winRate(successes: number, trials: number, z = Z_95): Proportion {
  if (!Number.isInteger(successes) || !Number.isInteger(trials) || successes < 0 || successes > trials) {
    throw new RangeError(
      `successes and trials must be integers with 0 ≤ successes ≤ trials, got ${successes} of ${trials}`,
    );
  }
  if (trials === 0) return { successes, trials, rate: Number.NaN, low: Number.NaN, high: Number.NaN };
  const p = successes / trials;
  const z2 = z * z;
  const denominator = 1 + z2 / trials;
  const centre = (p + z2 / (2 * trials)) / denominator;
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  // At 0 or all successes the bound is exactly 0 or 1; computing it would leave a rounding residue.
  const low = successes === 0 ? 0 : Math.max(0, centre - half);
  const high = successes === trials ? 1 : Math.min(1, centre + half);
  return { successes, trials, rate: p, low, high };
}

/** Every figure of one return series, as a track record or the research shows it. */
export type PerformanceSummary = {
  readonly periods: number;
  /** Π(1 + r) − 1. */
  readonly totalReturn: number;
  readonly annualisedVolatility: number;
  readonly sharpePerPeriod: number;
  readonly sharpeAnnualised: number;
  readonly skewness: number;
  readonly kurtosis: number;
  /** PSR(0): the probability that the true Sharpe ratio is above zero. */
  readonly psr: number;
  readonly maxDrawdown: number;
};

/** The summary of a return series with `periodsPerYear` periods a year (365 for daily crypto returns). */
export function summarizeReturns(returns: readonly number[], periodsPerYear: number): PerformanceSummary {
  const sample = sharpeSample(returns);
  return {
    periods: returns.length,
    totalReturn: compoundedReturn(returns),
    annualisedVolatility: annualisedVolatility(returns, periodsPerYear),
    sharpePerPeriod: sample.sharpe,
    sharpeAnnualised: annualiseSharpe(sample.sharpe, periodsPerYear),
    skewness: sample.skewness,
    kurtosis: sample.kurtosis,
    psr: probabilisticSharpeRatio(sample, 0),
    maxDrawdown: maxDrawdown(returns),
  };
}
