/**
 * The design-data study: every candidate evaluated on the walk-forward folds, the selection per
 * timeframe (and, tried first, one configuration for all timeframes), and the MS-2 that results.
 */
import type { EngineParams } from "../../src/engine/index.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import { loadStudySeries, STUDY_TIMEFRAMES } from "./series.ts";
import type { Config, Evaluation, Round, Target, WalkForwardStep } from "./walk-forward.ts";
import { ADDITIONS, DESIGN_END, Evaluator, FOLDS, paramsOf, selectConfig, walkForward } from "./walk-forward.ts";

/** The selection for one target: its walk-forward steps, the selection on all folds and whether it is adopted. */
export type TargetStudy = {
  readonly target: Target;
  readonly steps: readonly WalkForwardStep[];
  /** Steps whose selection beat MS-1 on the validation fold. */
  readonly stepsBetter: number;
  readonly final: Config;
  readonly rounds: readonly Round[];
  /** The final selection replaces MS-1 only when the walk-forward selections beat MS-1 on most validation folds. */
  readonly adopted: boolean;
};

/** Everything the design data says. */
export type DesignStudy = {
  readonly evaluations: readonly Evaluation[];
  /** One configuration for all timeframes (tried first), then 1h, 4h, 1d. */
  readonly global: TargetStudy;
  readonly perTimeframe: readonly TargetStudy[];
  readonly ms2: Readonly<Record<RealTimeframe, Config>>;
};

function studyTarget(evaluator: Evaluator, target: Target): TargetStudy {
  const steps = walkForward(evaluator, target);
  const stepsBetter = steps.filter((s) => s.selectedScore > s.baselineScore).length;
  const { config, rounds } = selectConfig(evaluator, FOLDS.map((_, i) => i), target);
  return { target, steps, stepsBetter, final: config, rounds, adopted: config.length > 0 && stepsBetter * 2 > steps.length };
}

/** Runs the whole design study on candles before DESIGN_END. */
export function runDesignStudy(): DesignStudy {
  const evaluator = new Evaluator(loadStudySeries(DESIGN_END));
  // Every single addition is evaluated up front so the report lists each one's effect per fold.
  evaluator.get([]);
  for (const a of ADDITIONS) evaluator.get([a]);
  const global = studyTarget(evaluator, null);
  const perTimeframe = STUDY_TIMEFRAMES.map((_, i) => studyTarget(evaluator, i));
  const ms2 = Object.fromEntries(STUDY_TIMEFRAMES.map((tf, i) => [tf, perTimeframe[i]!.adopted ? perTimeframe[i]!.final : []])) as Record<RealTimeframe, Config>;
  return { evaluations: evaluator.all(), global, perTimeframe, ms2 };
}

/** Engine parameters of MS-2 per timeframe. */
export function ms2ParamsOf(study: DesignStudy): Record<RealTimeframe, Partial<EngineParams>> {
  return Object.fromEntries(STUDY_TIMEFRAMES.map((tf) => [tf, paramsOf(study.ms2[tf])])) as Record<RealTimeframe, Partial<EngineParams>>;
}
