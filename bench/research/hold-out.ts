/**
 * Hold-out side of the study, kept apart from the design code path: it is called once, after
 * MS-2 has been fixed on the design data, and its figures are reported as they come out. Only
 * MS-1 and that MS-2 are ever run on it; the principled candidates of candidates.ts are not
 * (the hold-out has been used and is not used again for selection).
 */
import type { EngineParams } from "../../src/engine/index.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import type { Costs, Metrics, Window } from "./accounting.ts";
import { metricsOf, takeTrades, windowCloses } from "./accounting.ts";
import type { DailyReturns } from "./portfolio.ts";
import { sleeveDailyReturns } from "./portfolio.ts";
import type { Series } from "./series.ts";
import { loadStudySeries, signalEventsOf } from "./series.ts";
import { COSTS, DESIGN_END, FEE_ONLY } from "./walk-forward.ts";

/** 2023-06-16 to 2024-06-16 inclusive (the data ends on 2024-06-16). */
export const HOLD_OUT: Window & { readonly label: string } = {
  label: "2023-06-16 – 2024-06-16",
  start: DESIGN_END,
  end: Date.UTC(2024, 5, 17),
};

/** One engine's hold-out figures on one coin and timeframe. */
export type HoldOutFigures = {
  /** After the fee alone, as MS-2's goal was judged. */
  readonly feeOnly: Metrics;
  /** After fee and slippage. */
  readonly net: Metrics;
  /** The coin's daily returns after fee and slippage (for the equal-weight portfolio). */
  readonly daily: DailyReturns;
};

/** MS-1 and MS-2 figures of one coin and timeframe over the hold-out. */
export type HoldOutRow = {
  readonly series: Series;
  readonly ms1: Metrics;
  readonly ms2: Metrics;
  readonly ms1Net: HoldOutFigures;
  readonly ms2Net: HoldOutFigures;
};

function figures(
  series: Series,
  params: Partial<EngineParams>,
): { feeOnly: Metrics; net: Metrics; daily: DailyReturns } {
  const events = signalEventsOf(series.candles, params);
  const closes = windowCloses(series.candles, HOLD_OUT);
  const measure = (costs: Costs): Metrics =>
    metricsOf(takeTrades(events, series.candles, HOLD_OUT, costs), closes, costs);
  const trades = takeTrades(events, series.candles, HOLD_OUT, COSTS);
  return {
    feeOnly: measure(FEE_ONLY),
    net: metricsOf(trades, closes, COSTS),
    daily: sleeveDailyReturns(trades, series.candles, HOLD_OUT, COSTS),
  };
}

/**
 * Runs both engines over the whole history (the hold-out starts with the state the design data
 * left, as a live engine would) and measures the hold-out window, starting flat.
 */
export function runHoldOut(ms2: Readonly<Record<RealTimeframe, Partial<EngineParams>>>): HoldOutRow[] {
  return loadStudySeries(HOLD_OUT.end).map((series) => {
    const ms1Figures = figures(series, {});
    const ms2Figures = figures(series, ms2[series.timeframe]);
    return { series, ms1: ms1Figures.feeOnly, ms2: ms2Figures.feeOnly, ms1Net: ms1Figures, ms2Net: ms2Figures };
  });
}
