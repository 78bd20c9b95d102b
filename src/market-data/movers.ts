/**
 * Movers: the coins of the candle store ranked by price change and volume. One query reads,
 * per coin that is not stale, its newest candle (the price), the last closed candle of the
 * requested timeframe, the close 24 h before the newest candle's end and the volume of the
 * last 24 h; the rankings are made here. Every process can answer it (no in-memory feed
 * needed). A mover carries no signal: the current signal is the paid product
 * (accounts/entitlement.ts), and a free endpoint never shows it.
 */
import { sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import type { Timeframe } from "../market/timeframes.ts";

const DAY_MS = 24 * 3_600_000;

export interface MoverRow {
  symbol: string;
  price: number;
  changePct: number;
  change24hPct: number | null;
  volume: number;
  volume24h: number;
  updatedAt: number;
  /** The coin's candles are the demo feed's synthetic prices. */
  demo: boolean;
}

export interface Movers {
  gainers: MoverRow[];
  losers: MoverRow[];
  volumeLeaders: MoverRow[];
}

interface Raw {
  symbol: string;
  base_tf: string;
  last_update_at: string | Date;
  latest_open: number | string;
  price: number | string;
  k_open: number | string | null;
  k_close: number | string | null;
  k_volume: number | string | null;
  ref_close: number | string | null;
  volume_24h: number | string;
  demo: boolean;
}

const num = (v: number | string) => Number(v);

/** Reads the inputs of every fresh coin that has a closed candle on `tf`. */
export async function readMoverInputs(
  handle: DbHandle,
  tf: Timeframe,
  now: number,
  staleAfterMs: number,
): Promise<MoverRow[]> {
  const freshSince = new Date(now - staleAfterMs).toISOString();
  // Every lateral lookup walks the candles primary key (symbol, tf, open_time).
  const rows = await handle.rows<Raw>(sql`
    SELECT c.symbol, c.base_tf, c.demo, c.last_update_at, l.open_time AS latest_open, l.close AS price,
           k.open AS k_open, k.close AS k_close, k.volume AS k_volume, r.close AS ref_close, v.volume_24h
      FROM coins c
     CROSS JOIN LATERAL (
           SELECT open_time, close FROM candles
            WHERE symbol = c.symbol AND tf = c.base_tf ORDER BY open_time DESC LIMIT 1) l
     CROSS JOIN LATERAL (
           SELECT open, close, volume FROM candles
            WHERE symbol = c.symbol AND tf = ${tf} AND closed ORDER BY open_time DESC LIMIT 1) k
      LEFT JOIN LATERAL (
           SELECT close FROM candles
            WHERE symbol = c.symbol AND tf = c.base_tf AND closed AND open_time <= l.open_time - ${DAY_MS}::bigint
            ORDER BY open_time DESC LIMIT 1) r ON true
     CROSS JOIN LATERAL (
           SELECT coalesce(sum(volume), 0) AS volume_24h FROM candles
            WHERE symbol = c.symbol AND tf = c.base_tf AND open_time > l.open_time - ${DAY_MS}::bigint) v
     WHERE c.last_update_at > ${freshSince}::timestamptz`);
  return rows.map((r) => {
    const price = num(r.price);
    const open = num(r.k_open!);
    const ref = r.ref_close === null ? null : num(r.ref_close);
    return {
      symbol: r.symbol,
      price,
      changePct: (100 * (num(r.k_close!) - open)) / open,
      change24hPct: ref === null ? null : (100 * (price - ref)) / ref,
      volume: num(r.k_volume!),
      volume24h: num(r.volume_24h),
      updatedAt: new Date(r.last_update_at).getTime(),
      demo: r.demo === true,
    };
  });
}

const bySymbol = (a: { symbol: string }, b: { symbol: string }) =>
  a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0;

/** The three rankings, `limit` rows each. Pure. */
export function rankMovers(rows: MoverRow[], limit: number): Movers {
  const with24h = rows.filter((r) => r.change24hPct !== null);
  return {
    gainers: with24h
      .filter((r) => r.change24hPct! > 0)
      .sort((a, b) => b.change24hPct! - a.change24hPct! || bySymbol(a, b))
      .slice(0, limit),
    losers: with24h
      .filter((r) => r.change24hPct! < 0)
      .sort((a, b) => a.change24hPct! - b.change24hPct! || bySymbol(a, b))
      .slice(0, limit),
    volumeLeaders: [...rows].sort((a, b) => b.volume24h - a.volume24h || bySymbol(a, b)).slice(0, limit),
  };
}

/**
 * The coins one ranking may hold: never demo and real coins together. Real coins when there
 * are any; on a server with only the demo feed, its demo coins (each marked demo).
 */
export function oneProvenance(rows: MoverRow[]): MoverRow[] {
  const real = rows.filter((r) => !r.demo);
  return real.length > 0 ? real : rows;
}

/** Movers on `tf` now: inputs from the store, then the rankings (price and volume only), of one provenance. */
export async function computeMovers(
  handle: DbHandle,
  options: { tf: Timeframe; limit: number; now: number; staleAfterMs: number },
): Promise<Movers> {
  return rankMovers(
    oneProvenance(await readMoverInputs(handle, options.tf, options.now, options.staleAfterMs)),
    options.limit,
  );
}
