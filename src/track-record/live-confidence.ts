/**
 * The confidence of a timeframe's live record (docs/track-record.md, "Confidence"): the covered
 * coins as one equal-weight portfolio rebalanced daily (UTC days), its daily returns and their
 * statistics (src/performance/), split long/short and by market regime. Pure.
 */
import { splitByRegime, trailingRegimes } from "../performance/regime.ts";
import {
  expectedMaximumSharpe,
  type PerformanceSummary,
  type Proportion,
  probabilisticSharpeRatio,
  sharpeSample,
  summarizeReturns,
  timeInMarket,
  winRate,
} from "../performance/statistics.ts";
import type { LiveCandle, LiveSeries, LiveTrade } from "./live-record.ts";

export const DAY_MS = 86_400_000;
/** Daily returns, 365 a year (crypto trades every day). */
export const DAYS_PER_YEAR = 365;
/** The regime's look-back: the basket's trailing 30-day return. */
export const REGIME_LOOKBACK_DAYS = 30;

/**
 * The configurations the research tried per timeframe on its design data and the variance of
 * their per-day Sharpe ratios (docs/signal-quality.md, "Every configuration tried": 47 rows,
 * annualised Sharpe ÷ √365; test/unit/web/live-confidence.test.ts recomputes these from that
 * table). The DSR deflates the live Sharpe ratio by the best of that many skill-less trials.
 * Timeframes the research did not measure have no DSR.
 */
export const RESEARCH_TRIALS: Readonly<Record<string, { readonly trials: number; readonly sharpeVariance: number }>> =
  Object.freeze({
    "1h": { trials: 47, sharpeVariance: 0.00025067 },
    "4h": { trials: 47, sharpeVariance: 0.00020607 },
    "1d": { trials: 47, sharpeVariance: 0.00015261 },
  });

/** One coin's live series with the candles its regime basket needs (from 30 days before it went live). */
export interface CoveredSeries {
  readonly symbol: string;
  readonly series: LiveSeries;
  /** Closed candles from REGIME_LOOKBACK_DAYS + 1 days before `series.liveSince` on. */
  readonly history: readonly LiveCandle[];
}

export interface PortfolioFigures {
  readonly summary: PerformanceSummary;
  /** Closed trades with a result above zero after costs, with the 95% Wilson interval. */
  readonly winRate: Proportion;
}

export interface TimeframeConfidence {
  readonly tf: string;
  readonly coins: number;
  /** UTC days of the portfolio, YYYY-MM-DD; null with none. */
  readonly from: string | null;
  readonly to: string | null;
  readonly all: PortfolioFigures;
  readonly long: PortfolioFigures;
  readonly short: PortfolioFigures;
  /** Days whose basket rose (fell) over the previous 30 days, and the portfolio's figures on them. */
  readonly up: PerformanceSummary;
  readonly down: PerformanceSummary;
  /** Mean share of the covered coins' time spent in a position. */
  readonly timeInMarket: number;
  /** The deflated Sharpe ratio against the research's trials; null where it measured none. */
  readonly deflated: { readonly trials: number; readonly benchmarkAnnualised: number; readonly dsr: number } | null;
}

/** UTC day (days since the epoch) in which a candle closes. */
function closeDay(openTime: number, tfMs: number): number {
  return Math.floor((openTime + tfMs - 1) / DAY_MS);
}

function isoDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/**
 * Per day from `firstDay` to `lastDay`: the value at the day's last close, carried over days without one; NaN before
 * the first.
 */
function dayEnds(
  candles: readonly LiveCandle[],
  values: ArrayLike<number>,
  tfMs: number,
  firstDay: number,
  lastDay: number,
): Float64Array {
  const out = new Float64Array(lastDay - firstDay + 1).fill(Number.NaN);
  for (let i = 0; i < candles.length; i++) {
    const d = closeDay(candles[i]!.openTime, tfMs) - firstDay;
    if (d >= 0 && d < out.length) out[d] = values[i]!;
  }
  for (let d = 1; d < out.length; d++) if (Number.isNaN(out[d]!) && !Number.isNaN(out[d - 1]!)) out[d] = out[d - 1]!;
  return out;
}

/**
 * Equal-weight daily returns of equity series: each coin from its first day (starting from 1),
 * a coin whose equity reached 0 (liquidated) leaving the portfolio; days no coin covers are 0.
 */
function portfolioReturns(coins: ReadonlyArray<{ ends: Float64Array; first: number }>, days: number): number[] {
  const returns: number[] = [];
  for (let d = 0; d < days; d++) {
    let sum = 0;
    let n = 0;
    for (const c of coins) {
      if (d < c.first) continue;
      const before = d === c.first ? 1 : c.ends[d - 1]!;
      if (!(before > 0)) continue;
      sum += c.ends[d]! / before - 1;
      n++;
    }
    returns.push(n === 0 ? 0 : sum / n);
  }
  return returns;
}

function figures(returns: readonly number[], trades: readonly LiveTrade[]): PortfolioFigures {
  return {
    summary: summarizeReturns(returns, DAYS_PER_YEAR),
    winRate: winRate(trades.filter((t) => t.growth > 1).length, trades.length),
  };
}

/** The confidence figures of one timeframe's covered coins. */
export function timeframeConfidence(tf: string, tfMs: number, covered: readonly CoveredSeries[]): TimeframeConfidence {
  const live = covered.filter((c) => c.series.liveSince !== null && c.series.candles.length > 0);
  const firsts = live.map((c) => closeDay(c.series.candles[0]!.openTime, tfMs));
  const lasts = live.map((c) => closeDay(c.series.candles[c.series.candles.length - 1]!.openTime, tfMs));
  const firstDay = Math.min(...firsts);
  const lastDay = Math.max(...lasts);
  const days = live.length === 0 ? 0 : lastDay - firstDay + 1;
  const of = (pick: (s: LiveSeries) => Float64Array) =>
    portfolioReturns(
      live.map((c, i) => ({
        ends: dayEnds(c.series.candles, pick(c.series), tfMs, firstDay, lastDay),
        first: firsts[i]! - firstDay,
      })),
      days,
    );
  const all = of((s) => s.equity);
  const trades = live.flatMap((c) => c.series.trades);

  // The basket: each covered coin's close-to-close daily return, from 30 days before the first day.
  const basketFirst = firstDay - REGIME_LOOKBACK_DAYS;
  const closes = live.map((c) =>
    dayEnds(
      c.history,
      Float64Array.from(c.history, (h) => h.close),
      tfMs,
      basketFirst - 1,
      lastDay,
    ),
  );
  const basket: number[] = [];
  for (let d = 1; d < days + REGIME_LOOKBACK_DAYS + 1; d++) {
    const moves = closes.map((cl) => cl[d]! / cl[d - 1]! - 1).filter((r) => Number.isFinite(r));
    basket.push(moves.length === 0 ? 0 : moves.reduce((a, b) => a + b, 0) / moves.length);
  }
  const regimes = trailingRegimes(basket, REGIME_LOOKBACK_DAYS).slice(REGIME_LOOKBACK_DAYS);
  const { up, down } = splitByRegime(all, regimes);

  const exposure = live.map((c, i) => ({
    ends: dayExposure(c.series, tfMs, firstDay, days),
    first: firsts[i]! - firstDay,
  }));
  const perDay: number[] = [];
  for (let d = 0; d < days; d++) {
    const present = exposure.filter((e) => d >= e.first && !Number.isNaN(e.ends[d]!));
    if (present.length > 0) perDay.push(present.reduce((s, e) => s + e.ends[d]!, 0) / present.length);
  }

  const research = RESEARCH_TRIALS[tf];
  const sample = sharpeSample(all);
  const benchmark = research === undefined ? null : expectedMaximumSharpe(research.sharpeVariance, research.trials);
  return {
    tf,
    coins: live.length,
    from: days === 0 ? null : isoDay(firstDay),
    to: days === 0 ? null : isoDay(lastDay),
    all: figures(all, trades),
    long: figures(
      of((s) => s.longEquity),
      trades.filter((t) => t.direction === 1),
    ),
    short: figures(
      of((s) => s.shortEquity),
      trades.filter((t) => t.direction === -1),
    ),
    up: summarizeReturns(up, DAYS_PER_YEAR),
    down: summarizeReturns(down, DAYS_PER_YEAR),
    timeInMarket: perDay.length === 0 ? Number.NaN : timeInMarket(perDay),
    deflated:
      research === undefined || benchmark === null
        ? null
        : {
            trials: research.trials,
            benchmarkAnnualised: benchmark * Math.sqrt(DAYS_PER_YEAR),
            dsr: probabilisticSharpeRatio(sample, benchmark),
          },
  };
}

/** Per day: the share of the series' candles closing that day spent in a position (NaN on days without a candle). */
function dayExposure(series: LiveSeries, tfMs: number, firstDay: number, days: number): Float64Array {
  const held = new Float64Array(days);
  const count = new Float64Array(days);
  series.candles.forEach((c, i) => {
    const d = closeDay(c.openTime, tfMs) - firstDay;
    if (d < 0 || d >= days) return;
    count[d] = count[d]! + 1;
    held[d] = held[d]! + series.exposure[i]!;
  });
  return held.map((h, d) => (count[d]! === 0 ? Number.NaN : h / count[d]!));
}
