/**
 * The design-data study: every candidate evaluated on the walk-forward folds, the selection per
 * timeframe (and, tried first, one configuration for all timeframes), and the MS-2 that results.
 */
import type { EngineParams } from "../../src/engine/index.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import { takeTrades } from "./accounting.ts";
import type { Series } from "./series.ts";
import { loadStudySeries, STUDY_TIMEFRAMES, signalEventsOf } from "./series.ts";
import type { Config, Evaluation, Round, Target, WalkForwardStep } from "./walk-forward.ts";
import {
  ADDITIONS,
  DESIGN_END,
  Evaluator,
  FEE_ONLY,
  FOLDS,
  NO_COSTS,
  paramsOf,
  selectConfig,
  walkForward,
} from "./walk-forward.ts";

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

/** MS-1's trades over all five folds of one timeframe (twelve coins pooled), before and after fees. */
export type GrossNet = {
  readonly timeframe: RealTimeframe;
  readonly trades: number;
  readonly avgGrossPct: number;
  readonly avgNetPct: number;
  readonly exposurePct: number;
};

/** Everything the design data says. */
export type DesignStudy = {
  readonly ms1GrossNet: readonly GrossNet[];
  readonly evaluations: readonly Evaluation[];
  /** One configuration for all timeframes (tried first), then 1h, 4h, 1d. */
  readonly global: TargetStudy;
  readonly perTimeframe: readonly TargetStudy[];
  readonly ms2: Readonly<Record<RealTimeframe, Config>>;
};

function studyTarget(evaluator: Evaluator, target: Target): TargetStudy {
  const steps = walkForward(evaluator, target);
  const stepsBetter = steps.filter((s) => s.selectedScore > s.baselineScore).length;
  const { config, rounds } = selectConfig(
    evaluator,
    FOLDS.map((_, i) => i),
    target,
  );
  return {
    target,
    steps,
    stepsBetter,
    final: config,
    rounds,
    adopted: config.length > 0 && stepsBetter * 2 > steps.length,
  };
}

function grossNetOf(series: readonly Series[]): GrossNet[] {
  const window = { start: FOLDS[0]!.start, end: DESIGN_END };
  return STUDY_TIMEFRAMES.map((timeframe) => {
    let trades = 0;
    let gross = 0;
    let net = 0;
    let held = 0;
    let intervals = 0;
    for (const s of series.filter((x) => x.timeframe === timeframe)) {
      const events = signalEventsOf(s.candles, {});
      const withFees = takeTrades(events, s.candles, window, FEE_ONLY);
      const withoutFees = takeTrades(events, s.candles, window, NO_COSTS);
      trades += withFees.length;
      gross += withoutFees.reduce((sum, t) => sum + (t.growth - 1) * 100, 0);
      net += withFees.reduce((sum, t) => sum + (t.growth - 1) * 100, 0);
      held += withFees.reduce((sum, t) => sum + t.exitIndex - t.entryIndex, 0);
      intervals += s.candles.filter((c) => c.openTime >= window.start && c.openTime < window.end).length - 1;
    }
    return {
      timeframe,
      trades,
      avgGrossPct: gross / trades,
      avgNetPct: net / trades,
      exposurePct: (held * 100) / intervals,
    };
  });
}

/** Runs the whole design study on candles before DESIGN_END. */
export function runDesignStudy(): DesignStudy {
  const series = loadStudySeries(DESIGN_END);
  const evaluator = new Evaluator(series);
  // Every single addition is evaluated up front so the report lists each one's effect per fold.
  evaluator.get([]);
  for (const a of ADDITIONS) evaluator.get([a]);
  const global = studyTarget(evaluator, null);
  const perTimeframe = STUDY_TIMEFRAMES.map((_, i) => studyTarget(evaluator, i));
  const ms2 = Object.fromEntries(
    STUDY_TIMEFRAMES.map((tf, i) => [tf, perTimeframe[i]!.adopted ? perTimeframe[i]!.final : []]),
  ) as Record<RealTimeframe, Config>;
  return { ms1GrossNet: grossNetOf(series), evaluations: evaluator.all(), global, perTimeframe, ms2 };
}

/** Engine parameters of MS-2 per timeframe. */
export function ms2ParamsOf(study: DesignStudy): Record<RealTimeframe, Partial<EngineParams>> {
  return Object.fromEntries(STUDY_TIMEFRAMES.map((tf) => [tf, paramsOf(study.ms2[tf])])) as Record<
    RealTimeframe,
    Partial<EngineParams>
  >;
}
