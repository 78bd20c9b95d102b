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
