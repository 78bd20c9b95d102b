/**
 * The confidence side of the study, on the design data only: for MS-1, the MS-2 study's
 * selection and the principled candidates of candidates.ts, the fold-by-fold trade figures, the
 * long/short split and the equal-weight portfolio's statistics after fees and slippage, with the
 * deflated Sharpe ratio over every configuration tried and the probability of backtest
 * overfitting of each family. It never sees a hold-out candle (the series are cut at DESIGN_END).
 */
import type { BacktestOverfitting } from "../../src/performance/backtest-overfitting.ts";
import { probabilityOfBacktestOverfitting } from "../../src/performance/backtest-overfitting.ts";
import type { DeflatedSharpe, PerformanceSummary, Proportion } from "../../src/performance/statistics.ts";
import {
  deflatedSharpeRatio,
  mean,
  probabilisticSharpeRatio,
  sharpeRatio,
  sharpeSample,
  summarizeReturns,
  timeInMarket,
  winRate,
} from "../../src/performance/statistics.ts";
import { directionOf } from "../../src/track-record/track-record.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import type { TakenTrade } from "./accounting.ts";
import { positionValue, windowRange } from "./accounting.ts";
import type { Candidate, CoinFrame } from "./candidates.ts";
import { buildFrames, PRINCIPLED, SERVED, selectionCandidate } from "./candidates.ts";
import type { DailyReturns } from "./portfolio.ts";
import { daysBetween, equalWeight, exposureOf, sleeveDailyReturns } from "./portfolio.ts";
import { loadStudySeries, STUDY_TIMEFRAMES } from "./series.ts";
import type { DesignStudy } from "./study.ts";
import { COSTS, DESIGN_END, DESIGN_WINDOW, FOLDS, NO_COSTS, nameOf, paramsOf } from "./walk-forward.ts";

/** Daily periods in a year (crypto trades every day). */
export const PERIODS_PER_YEAR = 365;

/** CSCV blocks: C(16, 8) = 12,870 in-sample / out-of-sample splits of the design days (about two months a block). */
export const CSCV_BLOCKS = 16;

/** Folds on which a principled candidate's portfolio Sharpe ratio must beat MS-1's to be carried forward. */
export const FOLDS_TO_BEAT = 3;

/** Trade figures of a set of trades (pooled over coins). */
export type TradeFigures = {
  readonly trades: number;
  /** Mean result per trade before any cost, percent; null with no trade. */
  readonly grossPct: number | null;
  /** Mean result per trade after fee and slippage, percent; null with no trade. */
  readonly netPct: number | null;
  /** Mean net win / |mean net loss|; Infinity with wins and no loss, null without wins or trades. */
  readonly payoff: number | null;
  /**
   * The fee per side (no slippage) at which the mean trade breaks even, percent; null when the gross mean is not
   * positive.
   */
  readonly breakEvenFeePct: number | null;
};

function meanOf(values: readonly number[]): number | null {
  return values.length === 0 ? null : mean(values);
}

/** The fee per side f (fraction) with mean(positionValue(f)) = 1, by bisection (the mean falls as f rises). */
function breakEvenFee(trades: readonly TakenTrade[]): number | null {
  const meanGrowth = (fee: number): number =>
    mean(trades.map((t) => positionValue(t.direction, t.entryPrice, t.exitPrice, { fee, slippage: 0 })));
  if (trades.length === 0 || meanGrowth(0) <= 1) return null;
  let lo = 0;
  let hi = 0.5;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (meanGrowth(mid) > 1) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Gross and net mean, payoff and break-even fee of trades whose growth was computed with COSTS. */
export function tradeFigures(trades: readonly TakenTrade[]): TradeFigures {
  const net = trades.map((t) => (t.growth - 1) * 100);
  const gross = trades.map((t) => (positionValue(t.direction, t.entryPrice, t.exitPrice, NO_COSTS) - 1) * 100);
  const wins = net.filter((r) => r > 0);
  const losses = net.filter((r) => r < 0);
  const fee = breakEvenFee(trades);
  return {
    trades: trades.length,
    grossPct: meanOf(gross),
    netPct: meanOf(net),
    payoff: wins.length === 0 ? null : losses.length === 0 ? Infinity : mean(wins) / -mean(losses),
    breakEvenFeePct: fee === null ? null : fee * 100,
  };
}

/** Everything measured for one candidate at one timeframe. */
export type CandidateResult = {
  readonly candidate: Candidate;
  /** Per fold (each starting flat), pooled over the coins. */
  readonly folds: readonly TradeFigures[];
  /** Over the whole design period. */
  readonly design: TradeFigures;
  readonly longs: TradeFigures;
  readonly shorts: TradeFigures;
  /** The equal-weight portfolio's daily returns over the design period, after fee and slippage. */
  readonly daily: DailyReturns;
  readonly summary: PerformanceSummary;
  /** The portfolio's per-day Sharpe ratio on each fold's days. */
  readonly foldSharpes: readonly number[];
  /** Mean share of the candle intervals in a position over the coins. */
  readonly timeInMarket: number;
  /** Trades with a net result above zero. */
  readonly wins: Proportion;
  /** Shorts liquidated (value reached zero) over the design period: "COIN YYYY-MM-DD". */
  readonly liquidated: readonly string[];
  readonly deflated: DeflatedSharpe;
};

/** One configuration tried at a timeframe, as a trial of the deflated Sharpe ratio. */
export type Trial = {
  readonly name: string;
  readonly study: "MS-2 study" | "principled";
  readonly daily: DailyReturns;
  readonly sharpe: number;
  readonly psr: number;
  readonly dsr: number;
};

/** The confidence figures of one timeframe. */
export type TimeframeConfidence = {
  readonly timeframe: RealTimeframe;
  /** MS-1, the MS-2 study's selection (when it is not MS-1), then the principled candidates. */
  readonly results: readonly CandidateResult[];
  /** Every configuration tried at this timeframe: the MS-2 study's, then the principled ones. */
  readonly trials: readonly Trial[];
  /**
   * The DSR of the MS-2 study's selection counting only that study's trials (what it faced when chosen); null when the
   * selection is MS-1.
   */
  readonly selectionDsrAtSelection: number | null;
  readonly pbo: {
    readonly study: BacktestOverfitting;
    readonly principled: BacktestOverfitting;
    readonly all: BacktestOverfitting;
  };
  /** Names of the principled candidates carried into the pre-registered hold-out. */
  readonly carried: readonly string[];
  /** How far the next candle's open is from the signal close the trades are filled at. */
  readonly fillGap: FillGap;
};

/** The gap between a close and the next candle's open, in percent of the close. */
export type FillGap = {
  /** Mean |next open − close| over every candle. */
  readonly meanAbsolutePct: number;
  /**
   * Mean of direction·(next open − close) over MS-1's directional signal events: positive = the next open is better for
   * the position.
   */
  readonly atSignalsPct: number;
};

/** The fill gap of a timeframe's coins on the design data. */
export function fillGapOf(frames: readonly CoinFrame[]): FillGap {
  const absolute: number[] = [];
  const atSignals: number[] = [];
  for (const f of frames) {
    const indexOf = new Map(f.candles.map((c, i) => [c.openTime, i]));
    for (let i = 0; i + 1 < f.candles.length; i++)
      absolute.push(Math.abs(f.candles[i + 1]!.open - f.candles[i]!.close) / f.candles[i]!.close);
    for (const e of f.events) {
      const d = directionOf(e.signal);
      const next = f.candles[indexOf.get(e.candleOpenTime)! + 1];
      if (d !== 0 && next !== undefined) atSignals.push((d * (next.open - e.price)) / e.price);
    }
  }
  return { meanAbsolutePct: mean(absolute) * 100, atSignalsPct: mean(atSignals) * 100 };
}

type Measured = Omit<CandidateResult, "deflated">;

function measure(candidate: Candidate, frames: readonly CoinFrame[]): Measured {
  const folds = FOLDS.map((fold) => tradeFigures(frames.flatMap((f) => candidate.trades(f, fold, COSTS))));
  const perCoin = frames.map((f) => ({
    frame: f,
    range: windowRange(f.candles, DESIGN_WINDOW),
    trades: candidate.trades(f, DESIGN_WINDOW, COSTS),
  }));
  const all = perCoin.flatMap((x) => x.trades);
  const daily = equalWeight(perCoin.map((x) => sleeveDailyReturns(x.trades, x.frame.candles, DESIGN_WINDOW, COSTS)));
  const dateOf = (x: (typeof perCoin)[number], index: number): string =>
    new Date(x.frame.candles[x.range.first + index]!.openTime).toISOString().slice(0, 10);
  return {
    candidate,
    folds,
    design: tradeFigures(all),
    longs: tradeFigures(all.filter((t) => t.direction === 1)),
    shorts: tradeFigures(all.filter((t) => t.direction === -1)),
    daily,
    summary: summarizeReturns(daily.returns, PERIODS_PER_YEAR),
    foldSharpes: FOLDS.map((fold) => sharpeRatio(daysBetween(daily, fold.start, fold.end))),
    timeInMarket: timeInMarket(perCoin.map((x) => exposureOf(x.trades, x.range.last - x.range.first))),
    wins: winRate(all.filter((t) => t.growth > 1).length, all.length),
    liquidated: perCoin.flatMap((x) =>
      x.trades.filter((t) => t.growth === 0).map((t) => `${x.frame.coin} ${dateOf(x, t.exitIndex)}`),
    ),
  };
}

/** The returns matrix (days × candidates) of daily series over the same days. */
function matrixOf(series: readonly DailyReturns[]): number[][] {
  const days = series[0]!.days;
  for (const s of series) {
    if (s.days.length !== days.length || s.days.some((d, i) => d !== days[i]))
      throw new Error("the daily series of the candidates cover different days");
  }
  return days.map((_, t) => series.map((s) => s.returns[t]!));
}

/**
 * The rule (fixed before the principled candidates were run) by which one is carried into the
 * pre-registered hold-out: its design-period portfolio Sharpe ratio is positive and above MS-1's,
 * and above MS-1's on at least FOLDS_TO_BEAT of the five folds. Of the momentum look-backs only
 * the one with the highest design Sharpe ratio may be carried.
 */
export function carriedForward(served: Measured, principled: readonly Measured[]): string[] {
  const momentum = principled.filter((m) => m.candidate.family === "c");
  const bestMomentum = momentum.reduce<Measured | null>(
    (best, m) => (best === null || m.summary.sharpePerPeriod > best.summary.sharpePerPeriod ? m : best),
    null,
  );
  return principled
    .filter((m) => m.candidate.family !== "c" || m === bestMomentum)
    .filter((m) => {
      const foldsBetter = m.foldSharpes.filter((s, i) => s > served.foldSharpes[i]!).length;
      return m.summary.sharpePerPeriod > Math.max(0, served.summary.sharpePerPeriod) && foldsBetter >= FOLDS_TO_BEAT;
    })
    .map((m) => m.candidate.name);
}

/** Measures one timeframe. `frames` are that timeframe's coins. */
export function timeframeConfidence(
  study: DesignStudy,
  timeframe: RealTimeframe,
  frames: readonly CoinFrame[],
): TimeframeConfidence {
  const tfIndex = STUDY_TIMEFRAMES.indexOf(timeframe);
  const selection = study.perTimeframe[tfIndex]!.final;
  const served = measure(SERVED, frames);
  const adopted = study.perTimeframe[tfIndex]!.adopted ? "adopted" : "not adopted";
  const selected =
    selection.length === 0
      ? []
      : [measure(selectionCandidate(`${nameOf(selection)} (MS-2 study, ${adopted})`), frames)];
  const principled = PRINCIPLED.map((c) => measure(c, frames));

  const studyTrials = study.evaluations.map((e) => ({
    name: nameOf(e.config),
    study: "MS-2 study" as const,
    daily: e.daily[tfIndex]!,
  }));
  const principledTrials = principled.map((m) => ({
    name: m.candidate.name,
    study: "principled" as const,
    daily: m.daily,
  }));
  const trialSeries = [...studyTrials, ...principledTrials];
  const trialSharpes = trialSeries.map((t) => sharpeRatio(t.daily.returns));

  // The served MS-1 measured here and the MS-2 study's MS-1 configuration are the same trades.
  const ms1Trial = studyTrials.findIndex((t) => t.name === "MS-1");
  if (Math.abs(trialSharpes[ms1Trial]! - served.summary.sharpePerPeriod) > 1e-12)
    throw new Error(`MS-1 ${timeframe}: the two computations of its daily returns disagree`);

  const deflate = (m: Measured): CandidateResult => ({
    ...m,
    deflated: deflatedSharpeRatio(sharpeSample(m.daily.returns), trialSharpes),
  });
  const trials: Trial[] = trialSeries.map((t, i) => {
    const sample = sharpeSample(t.daily.returns);
    return {
      ...t,
      sharpe: trialSharpes[i]!,
      psr: probabilisticSharpeRatio(sample),
      dsr: deflatedSharpeRatio(sample, trialSharpes).dsr,
    };
  });
  const studySharpes = trialSharpes.slice(0, studyTrials.length);
  return {
    timeframe,
    results: [served, ...selected, ...principled].map(deflate),
    trials,
    selectionDsrAtSelection:
      selected.length === 0 ? null : deflatedSharpeRatio(sharpeSample(selected[0]!.daily.returns), studySharpes).dsr,
    pbo: {
      study: probabilityOfBacktestOverfitting(matrixOf(studyTrials.map((t) => t.daily)), CSCV_BLOCKS),
      principled: probabilityOfBacktestOverfitting(
        matrixOf([served.daily, ...principled.map((m) => m.daily)]),
        CSCV_BLOCKS,
      ),
      all: probabilityOfBacktestOverfitting(matrixOf(trialSeries.map((t) => t.daily)), CSCV_BLOCKS),
    },
    carried: carriedForward(served, principled),
    fillGap: fillGapOf(frames),
  };
}

/** The whole confidence study on the design data (series cut at DESIGN_END). */
export function runConfidence(study: DesignStudy): TimeframeConfidence[] {
  const series = loadStudySeries(DESIGN_END);
  const selection = Object.fromEntries(
    STUDY_TIMEFRAMES.map((tf, i) => [tf, paramsOf(study.perTimeframe[i]!.final)]),
  ) as Record<RealTimeframe, ReturnType<typeof paramsOf>>;
  const frames = buildFrames(series, selection);
  return STUDY_TIMEFRAMES.map((tf) =>
    timeframeConfidence(
      study,
      tf,
      frames.filter((f) => f.timeframe === tf),
    ),
  );
}
