/**
 * Normalisation of the `symbols` and `tf` request parameters, exactly as the contract says.
 */
import { TIMEFRAMES, type Timeframe } from "../market/timeframes.ts";

export const DEFAULT_TIMEFRAME: Timeframe = "4h";
export const DEFAULT_SYMBOLS = ["BTC", "ETH", "SOL", "BNB", "XRP"] as const;

/** Any value that is not exactly one of the five timeframes silently becomes 4h. */
export function normaliseTimeframe(raw: string | undefined): Timeframe {
  return (TIMEFRAMES as readonly string[]).includes(raw ?? "") ? (raw as Timeframe) : DEFAULT_TIMEFRAME;
}

/**
 * Split on commas, trim, upper-case, drop empties and duplicates (first kept), keep the first
 * `max`. Nothing left means the default list.
 */
export function normaliseSymbols(raw: string | undefined, max: number): string[] {
  const seen = new Set<string>();
  for (const part of (raw ?? "").split(",")) {
    const symbol = part.trim().toUpperCase();
    if (symbol === "" || seen.has(symbol)) continue;
    seen.add(symbol);
    if (seen.size === max) break;
  }
  return seen.size > 0 ? [...seen] : DEFAULT_SYMBOLS.slice(0, max);
}
