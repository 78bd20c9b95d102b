/**
 * Normalisation of the `symbols` and `tf` request parameters, exactly as the contract says.
 */
export const TIMEFRAMES = ["15m", "30m", "1h", "4h", "1d"] as const;
export type Timeframe = (typeof TIMEFRAMES)[number];
export const DEFAULT_TIMEFRAME: Timeframe = "4h";
export const DEFAULT_SYMBOLS = ["BTC", "ETH", "SOL", "BNB", "XRP"] as const;

/** A well-formed base code: 1 to 15 upper-case letters or digits. */
const SYMBOL_PATTERN = /^[A-Z0-9]{1,15}$/;

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

/** True for a code that could name a coin; anything else is answered `invalid_symbol`. */
export function isWellFormedSymbol(symbol: string): boolean {
  return SYMBOL_PATTERN.test(symbol);
}
