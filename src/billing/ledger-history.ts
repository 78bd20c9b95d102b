/**
 * The account page's view of the ledger, aggregated in SQL: calls and Tokens per MYT day (the
 * usage chart), the ledger with each day's charges folded into one line (paged newest first),
 * and the full ledger in id order for the CSV download (read in pages, never all at once).
 *
 * Days are MYT calendar days, as the daily cap counts them (clock.ts). The grouping expression
 * LEDGER_DAY is the one the index `ledger_entries_charge_day_idx` is built on (schema.ts), so a
 * day's charges are read from that index and a page stops after its days.
 */
import { sql } from "drizzle-orm";
import { mytDay } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import type { LedgerKind } from "../db/schema.ts";

/** MYT calendar day of a ledger row; must equal the expression of ledger_entries_charge_day_idx. */
const LEDGER_DAY = sql.raw(`((created_at AT TIME ZONE 'Asia/Kuala_Lumpur')::date)`);
const DAY_MS = 24 * 3600 * 1000;
/** A row's time as epoch milliseconds (the drivers return timestamps in different shapes). */
const epochMs = (column: string) => sql.raw(`floor(extract(epoch FROM ${column}) * 1000)::float8`);

export interface DailyUsage {
  /** MYT day, YYYY-MM-DD. */
  readonly day: string;
  /** Charged calls that day. */
  readonly calls: number;
  /** Tokens those calls spent. */
  readonly tokens: number;
}

/** The `days` MYT days up to and including today, oldest first; days without calls are zero. */
export async function dailyUsage(handle: DbHandle, accountId: number, now: number, days = 30): Promise<DailyUsage[]> {
  const wanted = Array.from({ length: days }, (_, i) => mytDay(now - (days - 1 - i) * DAY_MS));
  const rows = await handle.rows<{ day: string; calls: number | string; tokens: number | string }>(sql`
    SELECT ${LEDGER_DAY}::text AS day, count(*) AS calls, -sum(grant_delta + pack_delta) AS tokens
      FROM ledger_entries
     WHERE account_id = ${accountId} AND kind = 'charge'
       AND ${LEDGER_DAY} BETWEEN ${wanted[0]}::date AND ${wanted[days - 1]}::date
     GROUP BY 1`);
  const byDay = new Map(rows.map((r) => [r.day, r]));
  return wanted.map((day) => ({
    day,
    calls: Number(byDay.get(day)?.calls ?? 0),
    tokens: Number(byDay.get(day)?.tokens ?? 0),
  }));
}

/** One line of the page's ledger: a single entry, or the charges of one MYT day. */
export type LedgerLine =
  | {
      readonly type: "entry";
      /** Ledger row id; also the line's place in the order. */
      readonly id: number;
      readonly kind: LedgerKind;
      readonly at: Date;
      readonly tokens: number;
      readonly grantAfter: number;
      readonly packAfter: number;
      readonly reason: string | null;
    }
  | {
      readonly type: "charges";
      /** Id of the day's last charge (the line's place in the order). */
      readonly id: number;
      readonly day: string;
      /** The day's last charge. */
      readonly at: Date;
      readonly calls: number;
      /** Tokens spent that day (negative). */
      readonly tokens: number;
      /** Balances after the day's last charge. */
      readonly grantAfter: number;
      readonly packAfter: number;
    };

export interface LedgerPage {
  readonly lines: LedgerLine[];
  /** The `before` of the next (older) page, or null when this is the last. */
  readonly older: number | null;
}

type Num = number | string;
interface LineRow {
  type: "entry" | "charges";
  id: Num;
  kind: LedgerKind;
  day: string;
  at: Num;
  calls: Num;
  tokens: Num;
  grant_after: Num;
  pack_after: Num;
  reason: string | null;
}

/**
 * The ledger newest first, `size` lines from the line ordered just below `before` (a keyset:
 * each line's id is its place; null for the newest page). Every grant, pack, expiry and
 * adjustment is its own line; charges are one line per day. A `before` that is not a line of this
 * account still pages correctly (lines below it), and never reaches another account's rows.
 */
export async function ledgerPage(
  handle: DbHandle,
  accountId: number,
  before: number | null,
  size: number,
): Promise<LedgerPage> {
  const below = before ?? Number.MAX_SAFE_INTEGER;
  // The days to read stop at the day of the line at `before` (a day later, for ids handed out
  // around midnight in an order that differs from their transactions' times).
  const lastDay =
    before === null
      ? sql`'infinity'::date`
      : sql`coalesce((SELECT ${LEDGER_DAY} + 1 FROM ledger_entries WHERE id = ${before} AND account_id = ${accountId}),
        'infinity'::date)`;
  const rows = await handle.rows<LineRow>(sql`
    WITH charge_days AS (
      SELECT 'charges' AS type, max(id) AS id, 'charge' AS kind, ${LEDGER_DAY}::text AS day,
      ${epochMs("max(created_at)")} AS at,
             count(*) AS calls, sum(grant_delta + pack_delta) AS tokens,
             (array_agg(grant_after ORDER BY id DESC))[1] AS grant_after, (array_agg(pack_after ORDER BY id DESC))[1]
             AS pack_after,
             NULL::text AS reason
        FROM ledger_entries
       WHERE account_id = ${accountId} AND kind = 'charge' AND ${LEDGER_DAY} <= ${lastDay}
       GROUP BY ${LEDGER_DAY}
      HAVING max(id) < ${below}
       ORDER BY ${LEDGER_DAY} DESC
       LIMIT ${size + 1}),
    entries AS (
      SELECT 'entry' AS type, id, kind, ${LEDGER_DAY}::text AS day, ${epochMs("created_at")} AS at,
             1::bigint AS calls, grant_delta + pack_delta AS tokens, grant_after, pack_after, reason
        FROM ledger_entries
       WHERE account_id = ${accountId} AND kind <> 'charge' AND id < ${below}
       ORDER BY id DESC
       LIMIT ${size + 1})
    SELECT * FROM (SELECT * FROM charge_days UNION ALL SELECT * FROM entries) lines ORDER BY id DESC
    LIMIT ${size + 1}`);
  const lines = rows.slice(0, size).map(toLine);
  return { lines, older: rows.length > size ? lines[lines.length - 1]!.id : null };
}

function toLine(r: LineRow): LedgerLine {
  const common = {
    id: Number(r.id),
    at: new Date(Number(r.at)),
    tokens: Number(r.tokens),
    grantAfter: Number(r.grant_after),
    packAfter: Number(r.pack_after),
  };
  if (r.type === "charges") return { type: "charges", ...common, day: r.day, calls: Number(r.calls) };
  return { type: "entry", ...common, kind: r.kind, reason: r.reason };
}

/** One ledger row as the CSV download lists it. */
export interface LedgerRow {
  readonly id: number;
  readonly at: Date;
  readonly kind: LedgerKind;
  readonly grantDelta: number;
  readonly packDelta: number;
  readonly grantAfter: number;
  readonly packAfter: number;
  readonly reason: string | null;
}

/** Every ledger row of the account, oldest first, read `pageSize` rows at a time (keyset on id). */
export async function* allLedgerRows(
  handle: DbHandle,
  accountId: number,
  pageSize = 1000,
): AsyncGenerator<LedgerRow[]> {
  let after = 0;
  for (;;) {
    const rows = await handle.rows<{
      id: Num;
      at: Num;
      kind: LedgerKind;
      grant_delta: Num;
      pack_delta: Num;
      grant_after: Num;
      pack_after: Num;
      reason: string | null;
    }>(sql`
      SELECT id, ${epochMs("created_at")} AS at, kind, grant_delta, pack_delta, grant_after, pack_after, reason
        FROM ledger_entries WHERE account_id = ${accountId} AND id > ${after} ORDER BY id LIMIT ${pageSize}`);
    if (rows.length === 0) return;
    yield rows.map((r) => ({
      id: Number(r.id),
      at: new Date(Number(r.at)),
      kind: r.kind,
      grantDelta: Number(r.grant_delta),
      packDelta: Number(r.pack_delta),
      grantAfter: Number(r.grant_after),
      packAfter: Number(r.pack_after),
      reason: r.reason,
    }));
    if (rows.length < pageSize) return;
    after = Number(rows[rows.length - 1]!.id);
  }
}
