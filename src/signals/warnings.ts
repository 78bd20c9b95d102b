/**
 * What a call asked for that the contract quietly changed or ignored (a timeframe not offered,
 * symbols past the limit, a duplicate, a pair name, a parameter REST does not know): the call
 * stays 200 and charged as the contract says, and the caller is told in one response header
 * (gRPC: response metadata), `x-signals-warnings`, the warnings joined by "; ". Nothing is built
 * when there is nothing to say.
 */

/** The response header (and gRPC metadata key) carrying the warnings. */
export const WARNINGS_HEADER = "x-signals-warnings";

/** Quoted caller input fit for a header: printable ASCII only (others as \uXXXX), at most 32 characters. */
export function quoted(value: string): string {
  const cut = value.length > 32 ? `${value.slice(0, 32)}...` : value;
  const escapeChar = (c: string) =>
    c === "\\" || c === '"' ? `\\${c}` : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  return `"${cut.replace(/[\\"]|[^\x20-\x7e]/g, escapeChar)}"`;
}

/** Adds warnings to the response headers, after any already there (or before them: a timeframe's comes first). */
export function addWarnings(headers: Headers, warnings: readonly string[], where: "after" | "before" = "after"): void {
  if (warnings.length === 0) return;
  const before = headers.get(WARNINGS_HEADER);
  const added = warnings.join("; ");
  headers.set(
    WARNINGS_HEADER,
    before === null ? added : where === "after" ? `${before}; ${added}` : `${added}; ${before}`,
  );
}

/** The warning for query parameters a REST route does not read (at most five named). */
export function unknownParameterWarnings(names: readonly string[]): string[] {
  const distinct = [...new Set(names)];
  const named = distinct.slice(0, 5).map((n) => `parameter ${quoted(n)} ignored`);
  return distinct.length > 5 ? [...named, `${distinct.length - 5} more unknown parameters ignored`] : named;
}

/** Quote currencies a pair name ends with (spot markets' usual quotes). */
const PAIR = /^([A-Z0-9]{2,15}?)[-/_]?(USDT|USDC|FDUSD|BUSD|USD|EUR)$/;

/**
 * The warning for a symbol answered `unknown_symbol` or `invalid_symbol` that reads as a pair
 * name (`BTCUSDT`, `BTC/USDT`): the contract does not map pairs, but says what was meant.
 */
export function pairNameWarning(symbol: string): string | null {
  const base = PAIR.exec(symbol)?.[1];
  return base ? `${quoted(symbol)} looks like a pair name; symbols are base codes such as ${quoted(base)}` : null;
}

/**
 * Sets the call's warnings, in the order a caller reads their request: the timeframe, then any
 * warning already set (parameters REST does not read), then the symbols (beyond the limit,
 * duplicates, and entries refused as unknown or invalid symbols that read as pair names).
 * Looks only at refused entries; builds nothing when there is nothing to say.
 */
export function setCallWarnings(
  headers: Headers,
  read: { readonly tfWarning: string | null; readonly symbolWarnings: readonly string[] | null },
  entries: ReadonlyArray<{ ok: boolean; reason: string; symbol: string }>,
): void {
  let pairs: string[] | null = null;
  for (const entry of entries) {
    if (entry.ok || (entry.reason !== "unknown_symbol" && entry.reason !== "invalid_symbol")) continue;
    const pair = pairNameWarning(entry.symbol);
    if (pair) (pairs ??= []).push(pair);
  }
  if (read.tfWarning === null && read.symbolWarnings === null && pairs === null) return;
  const before = headers.get(WARNINGS_HEADER);
  const all = [read.tfWarning, before, ...(read.symbolWarnings ?? []), ...(pairs ?? [])].filter(
    (w): w is string => w !== null,
  );
  headers.set(WARNINGS_HEADER, all.join("; "));
}
