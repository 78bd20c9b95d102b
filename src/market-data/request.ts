/**
 * Reading the filters of the free endpoints. Every request field is a string on every protocol,
 * read here with one set of rules; a value that cannot be read is a 400 `bad_request` with a
 * message naming the parameter (except `tf`, which falls back to 4h like the paid endpoint).
 */
import { serviceError } from "../errors.ts";
import { commaList, symbolList } from "../market/symbols.ts";

/** Most symbols kept from a `symbols` filter; the rest are ignored. */
export const MAX_FILTER_SYMBOLS = 50;

export interface LimitRule {
  readonly fallback: number;
  readonly max: number;
}

export const LIMITS = {
  movers: { fallback: 10, max: 50 },
  derivatives: { fallback: 50, max: 200 },
  news: { fallback: 20, max: 100 },
  macro: { fallback: 50, max: 500 },
  fundamentals: { fallback: 50, max: 200 },
} as const satisfies Record<string, LimitRule>;

export type Dataset = keyof typeof LIMITS;

const bad = (message: string) => serviceError("bad_request", message);

/** `limit`: empty means the default; a whole number >= 1; above the maximum, the maximum. */
export function parseLimit(raw: string, rule: LimitRule): number {
  const text = raw.trim();
  if (text === "") return rule.fallback;
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1)
    throw bad(`limit must be a whole number from 1 to ${rule.max}, got "${text.slice(0, 40)}".`);
  return Math.min(Number(text), rule.max);
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * A point in time given as epoch milliseconds (digits) or an ISO-8601 date-time with an offset
 * (`Z` or `+08:00`); a local time without offset is ambiguous and refused. NaN when unreadable.
 */
export function parseInstant(raw: string): number {
  const text = raw.trim();
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (!ISO_INSTANT.test(text)) return Number.NaN;
  return Date.parse(text.replace(" ", "T").replace(/([+-]\d{2})(\d{2})$/, "$1:$2"));
}

const SINCE_FORMS = "epoch milliseconds or an ISO-8601 date-time with an offset (e.g. 2026-11-15T04:00:00Z)";

/** `since`: empty means no lower bound. */
export function parseSince(raw: string): number | null {
  const text = raw.trim();
  if (text === "") return null;
  const at = parseInstant(text);
  if (!Number.isFinite(at)) throw bad(`since must be ${SINCE_FORMS}, got "${text.slice(0, 40)}".`);
  return at;
}

/** A comma list of base codes: trimmed, upper-cased, empties and duplicates dropped, first 50; empty means all. */
export function parseSymbolFilter(raw: string): string[] {
  return symbolList(raw, MAX_FILTER_SYMBOLS);
}

/** A comma list of series names (exact, trimmed, duplicates dropped, first 50); empty means all. */
export function parseSeriesFilter(raw: string): string[] {
  return commaList(raw, MAX_FILTER_SYMBOLS);
}

/**
 * Cursors are opaque to callers: base64url of a JSON array holding the dataset's tag and the
 * sort key of the last row served. Each dataset's key is a fixed tuple of types.
 */
interface CursorKeys {
  derivatives: [symbol: string, venue: string];
  news: [time: number, id: string];
  macro: [time: number, series: string];
  fundamentals: [symbol: string];
}
export type CursorDataset = keyof CursorKeys;
/** The sort key of a dataset's row, as its cursor carries it. */
export type CursorKey<D extends CursorDataset> = CursorKeys[D];

const CURSOR_SHAPES: { readonly [D in CursorDataset]: readonly ("number" | "string")[] } = {
  derivatives: ["string", "string"],
  news: ["number", "string"],
  macro: ["number", "string"],
  fundamentals: ["string"],
};

export function encodeCursor<D extends CursorDataset>(dataset: D, key: CursorKey<D>): string {
  return Buffer.from(JSON.stringify([dataset, ...key]), "utf8").toString("base64url");
}

/** Empty means "from the start"; anything that is not one of our cursors for this dataset is a 400. */
export function parseCursor<D extends CursorDataset>(dataset: D, raw: string): CursorKey<D> | null {
  const text = raw.trim();
  if (text === "") return null;
  const refuse = () =>
    bad("cursor is not valid here: pass the next_cursor of a previous answer of the same endpoint, unchanged.");
  if (text.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(text)) throw refuse();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    throw refuse();
  }
  const shape = CURSOR_SHAPES[dataset];
  if (!Array.isArray(value) || value.length !== shape.length + 1 || value[0] !== dataset) throw refuse();
  const key = value.slice(1);
  for (let i = 0; i < shape.length; i++) {
    const part = key[i];
    if (shape[i] === "number" ? !Number.isSafeInteger(part) : typeof part !== "string") throw refuse();
  }
  return key as unknown as CursorKey<D>;
}

/** One page of rows, with whether another follows (the store reads one row more than `limit`). */
export interface Page<R> {
  rows: R[];
  more: boolean;
}

/**
 * The paging of every list endpoint: the request's `limit` (the dataset's rule) and `cursor`
 * are read, `read` fetches the page after that cursor, and the next page's cursor is the sort
 * key of the last row served (none on the last page).
 */
export async function readPage<D extends CursorDataset, R>(
  dataset: D,
  request: { readonly limit: string; readonly cursor: string },
  read: (limit: number, after: CursorKey<D> | null) => Promise<Page<R>>,
  keyOf: (row: R) => CursorKey<D>,
): Promise<{ rows: R[]; nextCursor: string | undefined }> {
  const limit = parseLimit(request.limit, LIMITS[dataset]);
  const page = await read(limit, parseCursor(dataset, request.cursor));
  const last = page.rows[page.rows.length - 1];
  return { rows: page.rows, nextCursor: page.more && last ? encodeCursor(dataset, keyOf(last)) : undefined };
}
