/**
 * Design-data side of the study: the walk-forward folds, the candidate additions to MS-1, the
 * score of a configuration on a fold, and the greedy forward selection that picks MS-2. It only
 * ever sees candles opening before DESIGN_END (series.ts cuts them), so the hold-out cannot leak in.
 */
import type { EngineParams } from "../../src/engine/index.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import type { Costs, Metrics, Window } from "./accounting.ts";
import { backtestWindow, takeTrades } from "./accounting.ts";
import type { DailyReturns } from "./portfolio.ts";
import { equalWeight, sleeveDailyReturns } from "./portfolio.ts";
import type { Series } from "./series.ts";
import { STUDY_TIMEFRAMES, signalEventsOf } from "./series.ts";

/** Fee per side: 0.1%. */
export const FEE = 0.001;

/** The costs the MS-2 selection was made with: the fee alone. */
export const FEE_ONLY: Costs = { fee: FEE, slippage: 0 };

/** No costs: a trade's gross result. */
export const NO_COSTS: Costs = { fee: 0, slippage: 0 };

/** Slippage per side of the confidence figures and of the pre-registered hold-out: 0.03%. */
export const SLIPPAGE = 0.0003;

/** Fee and slippage per side: the costs of every confidence figure (and of the pre-registered metric). */
export const COSTS: Costs = { fee: FEE, slippage: SLIPPAGE };

/** First instant after the design data: candles up to and including 2023-06-15 UTC are design data. */
export const DESIGN_END = Date.UTC(2023, 5, 16);

/** A named walk-forward fold of the design data. */
export type Fold = Window & { readonly name: string; readonly label: string };

/** Five consecutive half-year folds (the data starts 2020-10-23; a week of warm-up precedes F1). */
export const FOLDS: readonly Fold[] = [
  { name: "F1", label: "2020-11-01 – 2021-04-30", start: Date.UTC(2020, 10, 1), end: Date.UTC(2021, 4, 1) },
  { name: "F2", label: "2021-05-01 – 2021-10-31", start: Date.UTC(2021, 4, 1), end: Date.UTC(2021, 10, 1) },
  { name: "F3", label: "2021-11-01 – 2022-04-30", start: Date.UTC(2021, 10, 1), end: Date.UTC(2022, 4, 1) },
  { name: "F4", label: "2022-05-01 – 2022-10-31", start: Date.UTC(2022, 4, 1), end: Date.UTC(2022, 10, 1) },
  { name: "F5", label: "2022-11-01 – 2023-06-15", start: Date.UTC(2022, 10, 1), end: DESIGN_END },
];

/** The whole design period that is traded: the five folds end to end, starting flat. */
export const DESIGN_WINDOW: Window = { start: FOLDS[0]!.start, end: DESIGN_END };

/** One candidate addition to MS-1; additions of one family exclude each other. */
export type Addition = {
  readonly family: string;
  readonly label: string;
  readonly params: Partial<EngineParams>;
  readonly why: string;
};

/** The complete candidate list, in the order ties are broken. */
export const ADDITIONS: readonly Addition[] = [
  {
    family: "buffer",
    label: "break buffer 0.25 ATR",
    params: { breakBufferAtr: 0.25 },
    why: "a close barely through a swing level is often noise; demand a margin",
  },
  { family: "buffer", label: "break buffer 0.5 ATR", params: { breakBufferAtr: 0.5 }, why: "same, larger margin" },
  { family: "buffer", label: "break buffer 1 ATR", params: { breakBufferAtr: 1 }, why: "same, margin of a full ATR" },
  {
    family: "trail",
    label: "trailing defense",
    params: { trailDefense: true },
    why:
      "MS-1 keeps the defense at the pullback low of the break, " +
      "giving back whole moves; trail it to each new higher low",
  },
  {
    family: "trend",
    label: "with-trend breaks only",
    params: { withTrendOnly: true },
    why: "STRONG (BOS) breaks are the with-trend ones; a CHoCH ends the position instead of reversing it",
  },
  {
    family: "major",
    label: "major structure K = 10",
    params: { majorPivotHalfWidth: 10 },
    why: "higher-timeframe agreement: no position against the trend of a slower swing structure",
  },
  {
    family: "major",
    label: "major structure K = 20",
    params: { majorPivotHalfWidth: 20 },
    why: "same, slower structure",
  },
  {
    family: "pivot",
    label: "pivot half-width k = 5",
    params: { pivotHalfWidth: 5 },
    why: "fewer, larger swings: fewer trades and fees",
  },
];

/** A configuration: MS-1 plus some additions. */
export type Config = readonly Addition[];

/** Engine parameters of a configuration. */
export function paramsOf(config: Config): Partial<EngineParams> {
  return Object.assign({}, ...config.map((a) => a.params)) as Partial<EngineParams>;
}

/** "MS-1" or "MS-1 + a + b". */
export function nameOf(config: Config): string {
  return config.length === 0 ? "MS-1" : `MS-1 + ${config.map((a) => a.label).join(" + ")}`;
}

/** Per-timeframe summary of the twelve coins. */
export type TimeframeSummary = {
  readonly timeframe: RealTimeframe;
  /** Coins with at least one trade and a positive average trade. */
  readonly positiveAvg: number;
  /** Median profit factor over the coins; a coin without trades counts as 1. */
  readonly medianPf: number;
  readonly medianCompoundedPct: number;
};

/** Median of a list (mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The per-timeframe summaries of per-series metrics (same order as the series). */
export function summarize(series: readonly Series[], metrics: readonly Metrics[]): TimeframeSummary[] {
  return STUDY_TIMEFRAMES.map((timeframe) => {
    const rows = metrics.filter((_, i) => series[i]!.timeframe === timeframe);
    return {
      timeframe,
      positiveAvg: rows.filter((m) => m.avgTradePct !== null && m.avgTradePct > 0).length,
      medianPf: median(rows.map((m) => m.profitFactor ?? 1)),
      medianCompoundedPct: median(rows.map((m) => m.compoundedPct)),
    };
  });
}

// PF is clamped so that one fold with a median of ∞ or ~0 cannot dominate a mean of logs.
const PF_CLAMP = 10;

/** Score of one timeframe on a fold: ln(median profit factor), clamped to ±ln 10. */
export function scoreOf(summary: TimeframeSummary): number {
  return Math.log(Math.min(PF_CLAMP, Math.max(1 / PF_CLAMP, summary.medianPf)));
}

/** What a selection optimizes: one timeframe (index into STUDY_TIMEFRAMES) or, with null, the mean over all three. */
export type Target = number | null;

/**
 * A configuration's results on every fold, and per timeframe the daily returns of its
 * equal-weight portfolio of the twelve coins over DESIGN_WINDOW after COSTS (for the
 * confidence figures: every configuration is a trial of the deflated Sharpe ratio).
 */
export type Evaluation = {
  readonly config: Config;
  readonly folds: readonly TimeframeSummary[][];
  readonly daily: readonly DailyReturns[];
};

/** Score of an evaluation on one fold for a target. */
export function foldScore(evaluation: Evaluation, fold: number, target: Target): number {
  const summaries = evaluation.folds[fold]!;
  if (target !== null) return scoreOf(summaries[target]!);
  return summaries.reduce((s, t) => s + scoreOf(t), 0) / summaries.length;
}

/** Runs a configuration once over every design series and measures each fold. */
export function evaluate(config: Config, series: readonly Series[], folds: readonly Fold[] = FOLDS): Evaluation {
  const params = paramsOf(config);
  const events = series.map((s) => signalEventsOf(s.candles, params));
  const perFold = folds.map((fold) =>
    summarize(
      series,
      series.map((s, i) => backtestWindow(events[i]!, s.candles, fold, FEE_ONLY)),
    ),
  );
  const daily = STUDY_TIMEFRAMES.map((timeframe) =>
    equalWeight(
      series.flatMap((s, i) =>
        s.timeframe === timeframe
          ? [
              sleeveDailyReturns(
                takeTrades(events[i]!, s.candles, DESIGN_WINDOW, COSTS),
                s.candles,
                DESIGN_WINDOW,
                COSTS,
              ),
            ]
          : [],
      ),
    ),
  );
  return { config, folds: perFold, daily };
}

/** Caches evaluations by parameters, so each configuration runs once however often it is asked for. */
export class Evaluator {
  readonly #series: readonly Series[];
  readonly #cache = new Map<string, Evaluation>();
  constructor(series: readonly Series[]) {
    this.#series = series;
  }
  /** The evaluation of a configuration. */
  get(config: Config): Evaluation {
    const key = JSON.stringify(paramsOf(config));
    let found = this.#cache.get(key);
    if (found === undefined) {
      found = evaluate(config, this.#series);
      this.#cache.set(key, found);
    }
    return found;
  }
  /** Every configuration evaluated so far, in evaluation order. */
  all(): Evaluation[] {
    return [...this.#cache.values()];
  }
}

/** Smallest gain in the mean training score (ln PF) for an addition to be kept. */
export const MIN_GAIN = 0.01;

/** One candidate tried in a round, with its mean training score and the training folds it improved. */
export type Trial = { readonly config: Config; readonly train: number; readonly foldsBetter: number };

/** One round of the greedy selection: every candidate tried on top of the current configuration. */
export type Round = {
  readonly base: Config;
  readonly baseTrain: number;
  readonly tried: readonly Trial[];
  readonly accepted: Config | null;
};

/** Mean of the fold scores on the given folds. */
export function meanScore(evaluation: Evaluation, folds: readonly number[], target: Target): number {
  return folds.reduce((s, f) => s + foldScore(evaluation, f, target), 0) / folds.length;
}

/**
 * Greedy forward selection on the training folds: add the candidate that raises the mean score
 * most, if it gains at least MIN_GAIN and beats the current configuration on a majority of the
 * training folds; stop when no candidate does.
 */
export function selectConfig(
  evaluator: Evaluator,
  trainFolds: readonly number[],
  target: Target,
): { config: Config; rounds: Round[] } {
  let current: Config = [];
  const rounds: Round[] = [];
  for (;;) {
    const base = evaluator.get(current);
    const baseTrain = meanScore(base, trainFolds, target);
    const families = new Set(current.map((a) => a.family));
    const tried: Trial[] = ADDITIONS.filter((a) => !families.has(a.family)).map((a) => {
      const config = [...current, a];
      const e = evaluator.get(config);
      const foldsBetter = trainFolds.filter((f) => foldScore(e, f, target) > foldScore(base, f, target)).length;
      return { config, train: meanScore(e, trainFolds, target), foldsBetter };
    });
    let best: Trial | null = null;
    for (const t of tried) if (best === null || t.train > best.train) best = t;
    const accept = best !== null && best.train >= baseTrain + MIN_GAIN && best.foldsBetter * 2 > trainFolds.length;
    rounds.push({ base: current, baseTrain, tried, accepted: accept ? best!.config : null });
    if (!accept || best === null) return { config: current, rounds };
    current = best.config;
  }
}

/** One walk-forward step: select on the folds before `validation`, score on it. */
export type WalkForwardStep = {
  readonly validation: number;
  readonly selected: Config;
  readonly selectedScore: number;
  readonly baselineScore: number;
};

/** Anchored walk-forward: for each fold from the third on, select on all earlier folds and score on it. */
export function walkForward(evaluator: Evaluator, target: Target): WalkForwardStep[] {
  const steps: WalkForwardStep[] = [];
  for (let v = 2; v < FOLDS.length; v++) {
    const train = Array.from({ length: v }, (_, i) => i);
    const { config } = selectConfig(evaluator, train, target);
    steps.push({
      validation: v,
      selected: config,
      selectedScore: foldScore(evaluator.get(config), v, target),
      baselineScore: foldScore(evaluator.get([]), v, target),
    });
  }
  return steps;
}
