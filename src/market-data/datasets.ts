/**
 * The four pushed datasets behind the free endpoints (derivatives, news, macro, fundamentals):
 * their rows, the validation of one incoming row (a stable reason code per refusal, checked in
 * a fixed order, first failure wins), and the collection of a stream into the rows to write.
 * Pure: no I/O; the clock is a parameter.
 */
import { isWellFormedSymbol } from "../market/symbols.ts";

export const DATASETS = ["derivatives", "news", "macro", "fundamentals"] as const;
export type PushedDataset = (typeof DATASETS)[number];

export function isPushedDataset(value: string): value is PushedDataset {
  return (DATASETS as readonly string[]).includes(value);
}

/** How far a row's time may be ahead of our clock (feeder clocks drift a little). */
export const FUTURE_TOLERANCE_MS = 5 * 60_000;
/** Rows one stream may carry; everything is written in one transaction at its end. */
export const MAX_STREAM_ROWS = 50_000;
/** Rejections reported one by one; the per-reason counts stay complete. */
export const MAX_REPORTED = 100;
export const MAX_NEWS_COINS = 20;

export interface DerivativesInput {
  symbol: string;
  venue: string;
  time: number;
  fundingRate?: number | undefined;
  openInterestUsd?: number | undefined;
  longShortRatio?: number | undefined;
}
export interface DerivativesRow {
  symbol: string;
  venue: string;
  time: number;
  fundingRate: number | null;
  openInterestUsd: number | null;
  longShortRatio: number | null;
}

export interface NewsInput {
  id: string;
  time: number;
  title: string;
  source: string;
  url: string;
  coins: readonly string[];
}
export type NewsRow = Omit<NewsInput, "coins"> & { coins: string[] };

export interface MacroInput {
  series: string;
  time: number;
  value: number;
  unit: string;
  source: string;
}
export type MacroRow = MacroInput;

export interface FundamentalsInput {
  symbol: string;
  time: number;
  circulatingSupply: number;
  maxSupply?: number | undefined;
  marketCapUsd: number;
  rank?: number | undefined;
  source: string;
  totalSupply?: number | undefined;
  fullyDilutedValuationUsd?: number | undefined;
  athUsd?: number | undefined;
  athTime?: number | undefined;
}
export interface FundamentalsRow {
  symbol: string;
  time: number;
  circulatingSupply: number;
  maxSupply: number | null;
  marketCapUsd: number;
  rank: number | null;
  source: string;
  totalSupply: number | null;
  fullyDilutedValuationUsd: number | null;
  athUsd: number | null;
  athTime: number | null;
}

export interface DatasetTypes {
  derivatives: { input: DerivativesInput; row: DerivativesRow };
  news: { input: NewsInput; row: NewsRow };
  macro: { input: MacroInput; row: MacroRow };
  fundamentals: { input: FundamentalsInput; row: FundamentalsRow };
}
export type InputOf<D extends PushedDataset> = DatasetTypes[D]["input"];
export type RowOf<D extends PushedDataset> = DatasetTypes[D]["row"];

export type Checked<R> = { ok: true; row: R } | { ok: false; reason: string };

// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it matches
const CONTROL = /[\u0000-\u001f\u007f]/;
const ID_PATTERN = /^[\x21-\x7e]{1,128}$/;
const SERIES_PATTERN = /^[A-Za-z0-9 ._:/()%-]{1,64}$/;

const fail = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

/** Trimmed text of 1..max characters without control characters, or null. */
function text(value: unknown, max: number): string | null {
  if (typeof value !== "string") return null;
  const t = value.trim();
  return t.length >= 1 && t.length <= max && !CONTROL.test(t) ? t : null;
}

function symbolOf(value: unknown): string | null {
  const s = typeof value === "string" ? value.trim().toUpperCase() : "";
  return isWellFormedSymbol(s) ? s : null;
}

/** invalid_time / future_time, or null when the time is usable. */
function timeReason(time: number, now: number): string | null {
  if (!Number.isSafeInteger(time) || time <= 0) return "invalid_time";
  if (time > now + FUTURE_TOLERANCE_MS) return "future_time";
  return null;
}

function isHttpUrl(value: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a URL with a control character is refused
  if (value.length > 2048 || /[\s\u0000-\u001f\u007f]/.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

const finite = (...values: Array<number | undefined>) => values.every((v) => v === undefined || Number.isFinite(v));

export function checkDerivatives(input: DerivativesInput, now: number): Checked<DerivativesRow> {
  const symbol = symbolOf(input.symbol);
  if (!symbol) return fail("invalid_symbol");
  const venue = text(input.venue, 64);
  if (!venue) return fail("invalid_venue");
  const timeFail = timeReason(input.time, now);
  if (timeFail) return fail(timeFail);
  const { fundingRate, openInterestUsd, longShortRatio } = input;
  if (fundingRate === undefined && openInterestUsd === undefined && longShortRatio === undefined)
    return fail("no_values");
  if (!finite(fundingRate, openInterestUsd, longShortRatio)) return fail("non_finite_value");
  if (fundingRate !== undefined && Math.abs(fundingRate) > 1) return fail("funding_rate_out_of_range");
  if (openInterestUsd !== undefined && openInterestUsd < 0) return fail("negative_open_interest");
  if (longShortRatio !== undefined && longShortRatio <= 0) return fail("non_positive_ratio");
  return {
    ok: true,
    row: {
      symbol,
      venue,
      time: input.time,
      fundingRate: fundingRate ?? null,
      openInterestUsd: openInterestUsd ?? null,
      longShortRatio: longShortRatio ?? null,
    },
  };
}

export function checkNews(input: NewsInput, now: number): Checked<NewsRow> {
  const id = typeof input.id === "string" && ID_PATTERN.test(input.id) ? input.id : null;
  if (!id) return fail("invalid_id");
  const timeFail = timeReason(input.time, now);
  if (timeFail) return fail(timeFail);
  const title = text(input.title, 500);
  if (!title) return fail("invalid_title");
  const source = text(input.source, 100);
  if (!source) return fail("invalid_source");
  const url = typeof input.url === "string" ? input.url.trim() : "";
  if (!isHttpUrl(url)) return fail("invalid_url");
  const coins: string[] = [];
  for (const raw of input.coins ?? []) {
    const coin = symbolOf(raw);
    if (!coin) return fail("invalid_symbol");
    if (!coins.includes(coin)) coins.push(coin);
  }
  if (coins.length > MAX_NEWS_COINS) return fail("too_many_coins");
  return { ok: true, row: { id, time: input.time, title, source, url, coins } };
}

export function checkMacro(input: MacroInput, now: number): Checked<MacroRow> {
  const series = typeof input.series === "string" ? input.series.trim() : "";
  if (!SERIES_PATTERN.test(series)) return fail("invalid_series");
  const timeFail = timeReason(input.time, now);
  if (timeFail) return fail(timeFail);
  if (!finite(input.value) || typeof input.value !== "number") return fail("non_finite_value");
  const unit = text(input.unit, 32);
  if (!unit) return fail("invalid_unit");
  const source = text(input.source, 100);
  if (!source) return fail("invalid_source");
  return { ok: true, row: { series, time: input.time, value: input.value, unit, source } };
}

export function checkFundamentals(input: FundamentalsInput, now: number): Checked<FundamentalsRow> {
  const symbol = symbolOf(input.symbol);
  if (!symbol) return fail("invalid_symbol");
  const timeFail = timeReason(input.time, now);
  if (timeFail) return fail(timeFail);
  const { circulatingSupply, maxSupply, marketCapUsd, rank, totalSupply, fullyDilutedValuationUsd, athUsd, athTime } =
    input;
  if (
    !finite(circulatingSupply, maxSupply, marketCapUsd, totalSupply, fullyDilutedValuationUsd, athUsd) ||
    typeof circulatingSupply !== "number" ||
    typeof marketCapUsd !== "number"
  )
    return fail("non_finite_value");
  if (
    circulatingSupply < 0 ||
    (maxSupply !== undefined && maxSupply < 0) ||
    (totalSupply !== undefined && totalSupply < 0)
  )
    return fail("negative_supply");
  if (maxSupply !== undefined && circulatingSupply > maxSupply) return fail("supply_above_max");
  if (marketCapUsd < 0 || (fullyDilutedValuationUsd !== undefined && fullyDilutedValuationUsd < 0))
    return fail("negative_market_cap");
  if (rank !== undefined && (!Number.isSafeInteger(rank) || rank < 1)) return fail("invalid_rank");
  if (athUsd !== undefined && athUsd <= 0) return fail("non_positive_price");
  const athTimeFail = athTime === undefined ? null : timeReason(athTime, now);
  if (athTimeFail) return fail(athTimeFail);
  const source = text(input.source, 100);
  if (!source) return fail("invalid_source");
  return {
    ok: true,
    row: {
      symbol,
      time: input.time,
      circulatingSupply,
      maxSupply: maxSupply ?? null,
      marketCapUsd,
      rank: rank ?? null,
      source,
      totalSupply: totalSupply ?? null,
      fullyDilutedValuationUsd: fullyDilutedValuationUsd ?? null,
      athUsd: athUsd ?? null,
      athTime: athTime ?? null,
    },
  };
}

interface Spec<D extends PushedDataset> {
  check(input: InputOf<D>, now: number): Checked<RowOf<D>>;
  /** The row's key as received, for the rejection report. */
  reportedKey(input: InputOf<D>): unknown;
  /** Identity of a stored row. */
  identity(row: RowOf<D>): string;
  /** True: the latest `time` per identity is kept (a snapshot); false: the first row wins (immutable history). */
  latestWins: boolean;
}

export const SPECS: { [D in PushedDataset]: Spec<D> } = {
  derivatives: {
    check: checkDerivatives,
    reportedKey: (i) => i.symbol,
    identity: (r) => `${r.symbol}\u0000${r.venue}`,
    latestWins: true,
  },
  news: { check: checkNews, reportedKey: (i) => i.id, identity: (r) => r.id, latestWins: false },
  macro: {
    check: checkMacro,
    reportedKey: (i) => i.series,
    identity: (r) => `${r.series}\u0000${r.time}`,
    latestWins: false,
  },
  fundamentals: { check: checkFundamentals, reportedKey: (i) => i.symbol, identity: (r) => r.symbol, latestWins: true },
};

export interface Rejection {
  index: number;
  key: string;
  reason: string;
}

export interface PushSummary {
  accepted: number;
  rejected: number;
  duplicates: number;
  /** The first MAX_REPORTED rejections. */
  rejections: Rejection[];
  /** Rejections per reason, complete. */
  reasons: Record<string, number>;
}

export function emptyPushSummary(): PushSummary {
  return { accepted: 0, rejected: 0, duplicates: 0, rejections: [], reasons: {} };
}

/** Counts one rejection into a summary. */
export function addRejection(summary: PushSummary, rejection: Rejection): void {
  summary.rejected++;
  summary.reasons[rejection.reason] = (summary.reasons[rejection.reason] ?? 0) + 1;
  if (summary.rejections.length < MAX_REPORTED) summary.rejections.push(rejection);
}

/** Thrown when a stream carries more than MAX_STREAM_ROWS rows. */
export class TooManyRowsError extends Error {
  override name = "TooManyRowsError";
}

/**
 * Validates a stream row by row. Returns the rows to write (one per identity: the latest for
 * snapshots, the first for history) and the summary so far: rejections counted, valid rows
 * that another row of the stream makes redundant counted as duplicates. `accepted` is left to
 * the writer, which knows what the store already holds.
 */
export async function collectStream<D extends PushedDataset>(
  dataset: D,
  source: AsyncIterable<InputOf<D>> | Iterable<InputOf<D>>,
  now: number,
): Promise<{ rows: RowOf<D>[]; summary: PushSummary }> {
  const spec = SPECS[dataset] as Spec<D>;
  const summary = emptyPushSummary();
  const kept = new Map<string, RowOf<D>>();
  let index = 0;
  for await (const input of source) {
    if (index >= MAX_STREAM_ROWS)
      throw new TooManyRowsError(
        `a stream may carry at most ${MAX_STREAM_ROWS} rows; split the data and send it in several streams`,
      );
    const at = index++;
    const checked = spec.check(input, now);
    if (!checked.ok) {
      const key = spec.reportedKey(input);
      addRejection(summary, {
        index: at,
        key: (typeof key === "string" ? key : String(key ?? "")).slice(0, 64),
        reason: checked.reason,
      });
      continue;
    }
    const identity = spec.identity(checked.row);
    const previous = kept.get(identity);
    if (previous === undefined) {
      kept.set(identity, checked.row);
    } else {
      summary.duplicates++;
      if (spec.latestWins && checked.row.time > previous.time) kept.set(identity, checked.row);
    }
  }
  return { rows: [...kept.values()], summary };
}
