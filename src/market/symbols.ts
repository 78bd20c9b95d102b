/**
 * What a coin code may look like: the one rule every module that takes a symbol (the paid
 * endpoint, ingest, the free datasets, alert settings, the chart pages) applies.
 */

/** A well-formed base code: 1 to 15 upper-case letters or digits. */
const SYMBOL_PATTERN = /^[A-Z0-9]{1,15}$/;

/** True for a code that could name a coin; anything else is answered `invalid_symbol`. */
export function isWellFormedSymbol(symbol: string): boolean {
  return SYMBOL_PATTERN.test(symbol);
}

/**
 * A comma-separated request list as every endpoint reads it: each part trimmed and passed
 * through `normalise`, empties and repeats dropped (the first kept), at most `max` kept.
 */
export function commaList(
  raw: string | undefined,
  max: number,
  normalise: (part: string) => string = (part) => part,
): string[] {
  const seen = new Set<string>();
  for (const part of (raw ?? "").split(",")) {
    const item = normalise(part.trim());
    if (item === "" || seen.has(item)) continue;
    seen.add(item);
    if (seen.size === max) break;
  }
  return [...seen];
}

/** A comma list of coin codes: trimmed, upper-cased, distinct, at most `max`. */
export function symbolList(raw: string | undefined, max: number): string[] {
  return commaList(raw, max, (part) => part.toUpperCase());
}
