/**
 * Hold-out side of the study, kept apart from the design code path: it is called once, after
 * MS-2 has been fixed on the design data, and its figures are reported as they come out.
 */
import type { EngineParams } from "../../src/engine/index.ts";
import type { RealTimeframe } from "../../test/support/real-candles.ts";
import type { Metrics, Window } from "./accounting.ts";
import { backtestWindow } from "./accounting.ts";
import type { Series } from "./series.ts";
import { loadStudySeries, signalEventsOf } from "./series.ts";
import { DESIGN_END, FEE } from "./walk-forward.ts";

/** 2023-06-16 to 2024-06-16 inclusive (the data ends on 2024-06-16). */
export const HOLD_OUT: Window & { readonly label: string } = { label: "2023-06-16 – 2024-06-16", start: DESIGN_END, end: Date.UTC(2024, 5, 17) };

/** MS-1 and MS-2 figures of one coin and timeframe over the hold-out. */
export type HoldOutRow = { readonly series: Series; readonly ms1: Metrics; readonly ms2: Metrics };

/**
 * Runs both engines over the whole history (the hold-out starts with the state the design data
 * left, as a live engine would) and measures the hold-out window, starting flat.
 */
export function runHoldOut(ms2: Readonly<Record<RealTimeframe, Partial<EngineParams>>>): HoldOutRow[] {
  return loadStudySeries(HOLD_OUT.end).map((series) => ({
    series,
    ms1: backtestWindow(signalEventsOf(series.candles, {}), series.candles, HOLD_OUT, FEE),
    ms2: backtestWindow(signalEventsOf(series.candles, ms2[series.timeframe]), series.candles, HOLD_OUT, FEE),
  }));
}
