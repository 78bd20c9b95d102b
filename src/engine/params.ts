/** Tunable MS-1 parameters: pivot half-width k and Wilder ATR period N. */
export type EngineParams = {
  readonly pivotHalfWidth: number;
  readonly atrPeriod: number;
};

/** The MS-1 defaults from DESIGN.md §5: k = 3, N = 14. */
export const DEFAULT_PARAMS: EngineParams = Object.freeze({ pivotHalfWidth: 3, atrPeriod: 14 });

// Bounds exist so a corrupt persisted state or a typo cannot allocate huge ring buffers.
const MAX_PIVOT_HALF_WIDTH = 100;
const MAX_ATR_PERIOD = 1000;

/** Fills in defaults and rejects parameters that are not integers in their supported range. */
export function resolveParams(params?: Partial<EngineParams>): EngineParams {
  const pivotHalfWidth = params?.pivotHalfWidth ?? DEFAULT_PARAMS.pivotHalfWidth;
  const atrPeriod = params?.atrPeriod ?? DEFAULT_PARAMS.atrPeriod;
  if (!Number.isInteger(pivotHalfWidth) || pivotHalfWidth < 1 || pivotHalfWidth > MAX_PIVOT_HALF_WIDTH) {
    throw new RangeError(`pivotHalfWidth must be an integer in 1..${MAX_PIVOT_HALF_WIDTH}, got ${pivotHalfWidth}`);
  }
  if (!Number.isInteger(atrPeriod) || atrPeriod < 1 || atrPeriod > MAX_ATR_PERIOD) {
    throw new RangeError(`atrPeriod must be an integer in 1..${MAX_ATR_PERIOD}, got ${atrPeriod}`);
  }
  return { pivotHalfWidth, atrPeriod };
}
