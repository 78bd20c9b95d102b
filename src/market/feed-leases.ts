/**
 * Feeder leases and resume points (FeederService), plus the lease check PushCandles applies.
 * Every lease decision is one SQL statement on the database's own clock, so two feeders can
 * never both be granted the same coin, whatever their clocks say.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import type { FeederService } from "../../gen/signals/v1/feeder_pb.js";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { isWellFormedSymbol } from "./symbols.ts";

/** Request header of PushCandles naming the sending feeder. */
export const FEEDER_ID_HEADER = "x-feeder-id";

const MAX_SYMBOLS = 1_000;
const FEEDER_ID = /^[\x21-\x7e]{1,128}$/;

export interface LeaseState {
  symbol: string;
  held: boolean;
  holder: string;
  expiresInMs: number;
}

/** Takes or renews one coin's lease for `ttlMs`; answers who holds it afterwards. */
export async function acquireLease(db: DbHandle, feederId: string, symbol: string, ttlMs: number): Promise<LeaseState> {
  return (await acquireLeases(db, feederId, [symbol], ttlMs))[0]!;
}

/**
 * Takes or renews the leases of these coins for `ttlMs` (a fixed two statements however many:
 * a feeder renews every coin it leads at once); answers who holds each afterwards, in order.
 */
export async function acquireLeases(
  db: DbHandle,
  feederId: string,
  symbols: readonly string[],
  ttlMs: number,
): Promise<LeaseState[]> {
  if (symbols.length === 0) return [];
  // Symbol order: two feeders renewing overlapping sets lock the rows in the same order.
  const sorted = [...new Set(symbols)].sort();
  const granted = await db.rows<{ symbol: string; ms: number }>(sql`
    INSERT INTO feed_leases (symbol, holder, expires_at)
    SELECT w.symbol, ${feederId}, now() + ${ttlMs} * interval '1 millisecond'
      FROM unnest(${sql.param(sorted)}::text[]) AS w(symbol) ORDER BY w.symbol
    ON CONFLICT (symbol) DO UPDATE SET
      holder = excluded.holder,
      expires_at = excluded.expires_at,
      generation = feed_leases.generation + CASE WHEN feed_leases.holder = excluded.holder THEN 0 ELSE 1 END
    WHERE feed_leases.holder = excluded.holder OR feed_leases.expires_at <= now()
    RETURNING symbol, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS ms`);
  const mine = new Map(granted.map((r) => [r.symbol, r.ms]));
  const refused = sorted.filter((symbol) => !mine.has(symbol));
  // A statement of its own (a fresh snapshot), so it sees a holder that won the race above.
  const current =
    refused.length === 0
      ? []
      : await db.rows<{ symbol: string; holder: string; ms: number }>(sql`
    SELECT symbol, holder, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS ms FROM feed_leases
    WHERE symbol = ANY (${sql.param(refused)}::text[])`);
  const others = new Map(current.map((r) => [r.symbol, r]));
  return symbols.map((symbol) => {
    const ms = mine.get(symbol);
    if (ms !== undefined)
      return { symbol, held: true, holder: feederId, expiresInMs: Math.max(0, Math.round(Number(ms))) };
    const other = others.get(symbol);
    return {
      symbol,
      held: false,
      holder: other?.holder ?? "",
      expiresInMs: Math.max(0, Math.round(Number(other?.ms ?? 0))),
    };
  });
}

/** Releases this feeder's leases on `symbols`; returns how many it held. */
export async function releaseLeases(db: DbHandle, feederId: string, symbols: string[]): Promise<number> {
  if (symbols.length === 0) return 0;
  const rows = await db.rows(
    sql`DELETE FROM feed_leases WHERE symbol = ANY (${sql.param(symbols)}::text[]) AND holder = ${feederId}
        RETURNING symbol`,
  );
  return rows.length;
}

/** The holder of each coin's unexpired lease (coins without one are absent); every coin's without `symbols`. */
export async function liveLeaseHolders(db: DbHandle, symbols?: readonly string[]): Promise<Map<string, string>> {
  const rows = await db.rows<{ symbol: string; holder: string }>(
    symbols === undefined
      ? sql`SELECT symbol, holder FROM feed_leases WHERE expires_at > now()`
      : sql`SELECT symbol, holder FROM feed_leases WHERE symbol = ANY (${sql.param([...symbols])}::text[])
            AND expires_at > now()`,
  );
  return new Map(rows.map((r) => [r.symbol, r.holder]));
}

/**
 * The lease rule of PushCandles: a named feeder must hold the coin's live lease; an unnamed
 * sender (CSV import, a home-made feeder) is refused only while some feeder holds it.
 */
export function leaseAllows(holder: string | undefined, feederId: string | null): boolean {
  if (feederId !== null) return holder === feederId;
  return holder === undefined;
}

/**
 * Where each coin's stored real base history ends. A coin that holds only the demo feed's
 * synthetic history is unknown to a feeder: it backfills from what is real (nothing yet), and
 * its first push replaces the demo history (docs/feeder.md, "Demo data and real data").
 */
export async function feedResumePoints(
  db: DbHandle,
  symbols: string[],
): Promise<{ symbol: string; known: boolean; baseTf: string; lastClosedOpenTime: number }[]> {
  const out = [];
  for (const symbol of symbols) {
    const rows = await db.rows<{ base_tf: string; last: number | null }>(sql`
      SELECT c.base_tf, (SELECT max(k.open_time) FROM candles k WHERE k.symbol = c.symbol AND k.tf = c.base_tf
      AND k.closed AND NOT k.demo)::float8 AS last
      FROM coins c WHERE c.symbol = ${symbol} AND NOT c.demo`);
    const row = rows[0];
    out.push({
      symbol,
      known: row !== undefined,
      baseTf: row?.base_tf ?? "",
      lastClosedOpenTime: row?.last == null ? 0 : Number(row.last),
    });
  }
  return out;
}

function checkSymbols(raw: string[]): string[] {
  if (raw.length > MAX_SYMBOLS) throw serviceError("bad_request", `at most ${MAX_SYMBOLS} symbols per call`);
  const symbols = [...new Set(raw.map((s) => s.trim().toUpperCase()))];
  const bad = symbols.find((s) => !isWellFormedSymbol(s));
  if (bad !== undefined) throw serviceError("bad_request", `invalid symbol "${bad.slice(0, 32)}"`);
  return symbols;
}

function checkFeederId(raw: string): string {
  if (!FEEDER_ID.test(raw)) throw serviceError("bad_request", "feeder_id must be 1-128 visible ASCII characters");
  return raw;
}

/**
 * Builds the FeederService implementation over the database. With `feed` (the process's
 * IngestService backend), GetFeedState first commits what the feed has applied and not yet
 * flushed, so its answer covers every update this process accepted: a feeder whose push timed
 * out after the service applied it learns that it need not send it again.
 */
export function createFeederService(
  db: DbHandle,
  feed?: { flush(): Promise<void> },
): ServiceImpl<typeof FeederService> {
  return {
    async acquireLeases(req) {
      const feederId = checkFeederId(req.feederId);
      const ttlMs = Number(req.ttlMs);
      if (!Number.isInteger(ttlMs) || ttlMs < 1_000 || ttlMs > 600_000)
        throw serviceError("bad_request", "ttl_ms must be between 1000 and 600000");
      const leases = await acquireLeases(db, feederId, checkSymbols(req.symbols), ttlMs);
      return {
        leases: leases.map((l) => ({
          symbol: l.symbol,
          held: l.held,
          holder: l.holder,
          expiresInMs: BigInt(l.expiresInMs),
        })),
      };
    },
    async releaseLeases(req) {
      return { released: BigInt(await releaseLeases(db, checkFeederId(req.feederId), checkSymbols(req.symbols))) };
    },
    async getFeedState(req) {
      const symbols = checkSymbols(req.symbols);
      // A failed flush reloaded its coins from the store, which the read below then reports.
      await feed?.flush().catch(() => {});
      const points = await feedResumePoints(db, symbols);
      return { coins: points.map((p) => ({ ...p, lastClosedOpenTime: BigInt(p.lastClosedOpenTime) })) };
    },
  };
}
