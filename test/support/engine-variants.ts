import type { EngineParams } from "../../src/engine/params.ts";
import { MS2_PARAMS } from "../../src/engine/variants.ts";

/** An engine variant the DESIGN §5 property tests run against. */
export type EngineVariant = { readonly name: string; readonly params: Partial<EngineParams> };

/**
 * MS-1 (served), MS-2 at 4h (the study's selection) and every MS-2 option at once, scaled to short generated series.
 */
export const ENGINE_VARIANTS: readonly EngineVariant[] = [
  { name: "MS-1", params: {} },
  { name: "MS-2 4h", params: MS2_PARAMS["4h"] },
  {
    name: "all MS-2 options",
    params: { breakBufferAtr: 0.5, trailDefense: true, withTrendOnly: true, majorPivotHalfWidth: 6 },
  },
];
