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
  const granted = await db.rows<{ holder: string; ms: number }>(sql`
    INSERT INTO feed_leases (symbol, holder, expires_at)
    VALUES (${symbol}, ${feederId}, now() + ${ttlMs} * interval '1 millisecond')
    ON CONFLICT (symbol) DO UPDATE SET
      holder = excluded.holder,
      expires_at = excluded.expires_at,
      generation = feed_leases.generation + CASE WHEN feed_leases.holder = excluded.holder THEN 0 ELSE 1 END
    WHERE feed_leases.holder = excluded.holder OR feed_leases.expires_at <= now()
    RETURNING holder, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS ms`);
  if (granted[0])
    return { symbol, held: true, holder: feederId, expiresInMs: Math.max(0, Math.round(Number(granted[0].ms))) };
  const current = await db.rows<{ holder: string; ms: number }>(sql`
    SELECT holder, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS ms FROM feed_leases
    WHERE symbol = ${symbol}`);
  return {
    symbol,
    held: false,
    holder: current[0]?.holder ?? "",
    expiresInMs: Math.max(0, Math.round(Number(current[0]?.ms ?? 0))),
  };
}

/** Releases this feeder's leases on `symbols`; returns how many it held. */
export async function releaseLeases(db: DbHandle, feederId: string, symbols: string[]): Promise<number> {
  let released = 0;
  for (const symbol of symbols) {
    const rows = await db.rows(
      sql`DELETE FROM feed_leases WHERE symbol = ${symbol} AND holder = ${feederId} RETURNING symbol`,
    );
    released += rows.length;
  }
  return released;
}

/** The holder of each coin's unexpired lease (coins without one are absent). */
export async function liveLeaseHolders(db: DbHandle, symbols: string[]): Promise<Map<string, string>> {
  const holders = new Map<string, string>();
  for (const symbol of symbols) {
    const rows = await db.rows<{ holder: string }>(
      sql`SELECT holder FROM feed_leases WHERE symbol = ${symbol} AND expires_at > now()`,
    );
    if (rows[0]) holders.set(symbol, rows[0].holder);
  }
  return holders;
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
      const leases = [];
      for (const symbol of checkSymbols(req.symbols)) {
        const lease = await acquireLease(db, feederId, symbol, ttlMs);
        leases.push({ symbol, held: lease.held, holder: lease.holder, expiresInMs: BigInt(lease.expiresInMs) });
      }
      return { leases };
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
