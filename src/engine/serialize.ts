import { type EngineParams, resolveParams } from "./params.ts";
import type { Signal } from "./signal.ts";
import { SIGNALS } from "./signal.ts";
import type { EngineState } from "./state.ts";
import { ENGINE_STATE_VERSION, ringSize } from "./state.ts";

/** The state as a JSON string; `restoreState(JSON.parse(text))` gives back an equal state. */
export function serializeState(state: EngineState): string {
  return JSON.stringify(state);
}

function fail(field: string): never {
  throw new TypeError(`invalid engine state: ${field}`);
}

function num(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value)) fail(field);
  return value;
}

function numOrNull(value: unknown, field: string): number | null {
  return value === null ? null : num(value, field);
}

function bool(value: unknown, field: string): boolean {
  if (typeof value !== "boolean") fail(field);
  return value;
}

function numArray(value: unknown, length: number, field: string): number[] {
  if (!Array.isArray(value) || value.length !== length) fail(field);
  return value.map((v, i) => num(v, `${field}[${i}]`));
}

/**
 * Validates parsed JSON (e.g. a jsonb column) into a fresh EngineState; throws TypeError if stepClosed could not have
 * made it.
 */
export function restoreState(value: unknown): EngineState {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("not an object");
  const v = value as Record<string, unknown>;
  if (v.version !== ENGINE_STATE_VERSION) fail("version");
  let params: EngineParams;
  try {
    // Checkpoints stored before the MS-2 options existed lack them; absent means the MS-1 default.
    params = resolveParams({
      pivotHalfWidth: num(v.pivotHalfWidth, "pivotHalfWidth"),
      atrPeriod: num(v.atrPeriod, "atrPeriod"),
      breakBufferAtr: v.breakBufferAtr === undefined ? undefined : num(v.breakBufferAtr, "breakBufferAtr"),
      trailDefense: v.trailDefense === undefined ? undefined : bool(v.trailDefense, "trailDefense"),
      withTrendOnly: v.withTrendOnly === undefined ? undefined : bool(v.withTrendOnly, "withTrendOnly"),
      majorPivotHalfWidth:
        v.majorPivotHalfWidth === undefined ? undefined : num(v.majorPivotHalfWidth, "majorPivotHalfWidth"),
    });
  } catch {
    fail("parameters");
  }
  const width = ringSize(Math.max(params.pivotHalfWidth, params.majorPivotHalfWidth));
  const majorTrend = v.majorTrend ?? 0;
  if (majorTrend !== -1 && majorTrend !== 0 && majorTrend !== 1) fail("majorTrend");
  const count = num(v.count, "count");
  if (!Number.isInteger(count) || count < 0) fail("count");
  const signal = v.signal;
  if (typeof signal !== "string" || !SIGNALS.includes(signal as Signal)) fail("signal");
  const trend = v.trend;
  if (trend !== -1 && trend !== 0 && trend !== 1) fail("trend");

  const state: EngineState = {
    version: ENGINE_STATE_VERSION,
    pivotHalfWidth: params.pivotHalfWidth,
    atrPeriod: params.atrPeriod,
    breakBufferAtr: params.breakBufferAtr,
    trailDefense: params.trailDefense,
    withTrendOnly: params.withTrendOnly,
    majorPivotHalfWidth: params.majorPivotHalfWidth,
    count,
    lastOpenTime: numOrNull(v.lastOpenTime, "lastOpenTime"),
    lastClose: numOrNull(v.lastClose, "lastClose"),
    trSum: num(v.trSum, "trSum"),
    atr: numOrNull(v.atr, "atr"),
    highs: numArray(v.highs, width, "highs"),
    lows: numArray(v.lows, width, "lows"),
    openTimes: numArray(v.openTimes, width, "openTimes"),
    swingHigh: numOrNull(v.swingHigh, "swingHigh"),
    swingHighAt: numOrNull(v.swingHighAt, "swingHighAt"),
    swingHighBroken: bool(v.swingHighBroken, "swingHighBroken"),
    minSinceHigh: numOrNull(v.minSinceHigh, "minSinceHigh"),
    swingLow: numOrNull(v.swingLow, "swingLow"),
    swingLowAt: numOrNull(v.swingLowAt, "swingLowAt"),
    swingLowBroken: bool(v.swingLowBroken, "swingLowBroken"),
    maxSinceLow: numOrNull(v.maxSinceLow, "maxSinceLow"),
    trend,
    majorHigh: v.majorHigh === undefined ? null : numOrNull(v.majorHigh, "majorHigh"),
    majorHighBroken: v.majorHighBroken === undefined ? false : bool(v.majorHighBroken, "majorHighBroken"),
    majorLow: v.majorLow === undefined ? null : numOrNull(v.majorLow, "majorLow"),
    majorLowBroken: v.majorLowBroken === undefined ? false : bool(v.majorLowBroken, "majorLowBroken"),
    majorTrend,
    signal: signal as Signal,
    defense: numOrNull(v.defense, "defense"),
    signalAt: numOrNull(v.signalAt, "signalAt"),
  };

  // Cross-field invariants the fold maintains; a state violating them did not come from stepClosed.
  if (
    (state.count === 0) !== (state.lastClose === null) ||
    (state.lastClose === null) !== (state.lastOpenTime === null)
  ) {
    fail("count / lastClose / lastOpenTime disagree");
  }
  if (state.count >= state.atrPeriod !== (state.atr !== null)) fail("atr is inconsistent with count");
  if (
    (state.swingHigh === null) !== (state.minSinceHigh === null) ||
    (state.swingHigh === null) !== (state.swingHighAt === null)
  ) {
    fail("swing high fields disagree");
  }
  if (
    (state.swingLow === null) !== (state.maxSinceLow === null) ||
    (state.swingLow === null) !== (state.swingLowAt === null)
  ) {
    fail("swing low fields disagree");
  }
  if ((state.signal === "NONE") !== (state.defense === null)) fail("signal / defense disagree");
  return state;
}
