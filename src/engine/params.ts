/**
 * Tunable engine parameters. The first two are MS-1's (pivot half-width k, Wilder ATR period N);
 * the others are the MS-2 research options (docs/signal-quality.md), all off by default so that
 * the defaults are exactly MS-1.
 */
export type EngineParams = {
  readonly pivotHalfWidth: number;
  readonly atrPeriod: number;
  /** A close must pass the swing level by more than this many ATRs to break it (0 = MS-1). */
  readonly breakBufferAtr: number;
  /** Move the defense of an open signal to each newly confirmed swing point that tightens it. */
  readonly trailDefense: boolean;
  /** A counter-trend break (CHoCH) ends the signal (NONE) instead of opening one; only BOS are positions. */
  readonly withTrendOnly: boolean;
  /** Half-width K of a second, major swing structure; breaks against its trend give NONE (0 = off). */
  readonly majorPivotHalfWidth: number;
};

/** The MS-1 defaults of docs/signals.md: k = 3, N = 14, no MS-2 option. */
export const DEFAULT_PARAMS: EngineParams = Object.freeze({
  pivotHalfWidth: 3,
  atrPeriod: 14,
  breakBufferAtr: 0,
  trailDefense: false,
  withTrendOnly: false,
  majorPivotHalfWidth: 0,
});

// Bounds exist so a corrupt persisted state or a typo cannot allocate huge ring buffers.
const MAX_PIVOT_HALF_WIDTH = 100;
const MAX_ATR_PERIOD = 1000;
const MAX_BREAK_BUFFER_ATR = 10;

function halfWidth(value: number, name: string, min: number): number {
  if (!Number.isInteger(value) || value < min || value > MAX_PIVOT_HALF_WIDTH) {
    throw new RangeError(`${name} must be an integer in ${min}..${MAX_PIVOT_HALF_WIDTH}, got ${value}`);
  }
  return value;
}

/** Fills in defaults and rejects parameters outside their supported range. */
export function resolveParams(params?: Partial<EngineParams>): EngineParams {
  const pivotHalfWidth = halfWidth(params?.pivotHalfWidth ?? DEFAULT_PARAMS.pivotHalfWidth, "pivotHalfWidth", 1);
  const atrPeriod = params?.atrPeriod ?? DEFAULT_PARAMS.atrPeriod;
  if (!Number.isInteger(atrPeriod) || atrPeriod < 1 || atrPeriod > MAX_ATR_PERIOD) {
    throw new RangeError(`atrPeriod must be an integer in 1..${MAX_ATR_PERIOD}, got ${atrPeriod}`);
  }
  const breakBufferAtr = params?.breakBufferAtr ?? DEFAULT_PARAMS.breakBufferAtr;
  if (!Number.isFinite(breakBufferAtr) || breakBufferAtr < 0 || breakBufferAtr > MAX_BREAK_BUFFER_ATR) {
    throw new RangeError(`breakBufferAtr must be a number in 0..${MAX_BREAK_BUFFER_ATR}, got ${breakBufferAtr}`);
  }
  const trailDefense = params?.trailDefense ?? DEFAULT_PARAMS.trailDefense;
  const withTrendOnly = params?.withTrendOnly ?? DEFAULT_PARAMS.withTrendOnly;
  if (typeof trailDefense !== "boolean" || typeof withTrendOnly !== "boolean") {
    throw new RangeError("trailDefense and withTrendOnly must be booleans");
  }
  const majorPivotHalfWidth = halfWidth(
    params?.majorPivotHalfWidth ?? DEFAULT_PARAMS.majorPivotHalfWidth,
    "majorPivotHalfWidth",
    0,
  );
  return { pivotHalfWidth, atrPeriod, breakBufferAtr, trailDefense, withTrendOnly, majorPivotHalfWidth };
}
