/**
 * The public /status page (no sign-in): each coin's feed state as the service sees it, from
 * its own store: `stale` when no update arrived for STALE_AFTER (the API answers `stale` too),
 * `backfilling` when updates arrive but the stored history is more than a candle behind now,
 * `live` otherwise; with its last closed candle and whether a feeder holds its lease.
 */
import { sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { formatMyt } from "./format.ts";
import { html, layout } from "./html.ts";
import type { PageContext } from "./auth-pages.ts";

export type FeedState = "live" | "stale" | "backfilling";

export interface CoinFeedStatus {
  symbol: string;
  baseTf: string;
  state: FeedState;
  /** Open time of the last closed base candle (epoch ms), or null. */
  lastCandleOpenTime: number | null;
  /** When the last update (forming or closed) arrived, epoch ms. */
  lastUpdateAt: number;
  /** A feeder holds this coin's lease now. */
  leased: boolean;
}

const BASE_MS: Record<string, number> = { "15m": 900_000, "30m": 1_800_000, "1h": 3_600_000, "4h": 14_400_000, "1d": 86_400_000 };

/** The feed state of a coin from its times (pure). */
export function feedState(now: number, lastUpdateAt: number, lastCandleOpenTime: number | null, baseMs: number, staleAfterMs: number): FeedState {
  if (now - lastUpdateAt > staleAfterMs) return "stale";
  // The candle after the last stored one should have closed by now (a minute of grace): catching up.
  if (lastCandleOpenTime === null || lastCandleOpenTime + 2 * baseMs + 60_000 < now) return "backfilling";
  return "live";
}

/** Reads every coin's feed status from the store, sorted by symbol. */
export async function loadFeedStatus(db: DbHandle, now: number, staleAfterMs: number): Promise<CoinFeedStatus[]> {
  const rows = await db.rows<{ symbol: string; base_tf: string; last_update_ms: number; last_candle: number | null; leased: boolean }>(sql`
    SELECT c.symbol, c.base_tf,
      (extract(epoch FROM c.last_update_at) * 1000)::float8 AS last_update_ms,
      (SELECT max(k.open_time) FROM candles k WHERE k.symbol = c.symbol AND k.tf = c.base_tf AND k.closed)::float8 AS last_candle,
      EXISTS (SELECT 1 FROM feed_leases l WHERE l.symbol = c.symbol AND l.expires_at > now()) AS leased
    FROM coins c ORDER BY c.symbol`);
  return rows.map((r) => {
    const lastCandle = r.last_candle === null ? null : Number(r.last_candle);
    const lastUpdateAt = Number(r.last_update_ms);
    return { symbol: r.symbol, baseTf: r.base_tf, state: feedState(now, lastUpdateAt, lastCandle, BASE_MS[r.base_tf] ?? 3_600_000, staleAfterMs), lastCandleOpenTime: lastCandle, lastUpdateAt, leased: Boolean(r.leased) };
  });
}

/** The /status page. */
export function renderStatusPage(ctx: PageContext, coins: readonly CoinFeedStatus[], now: number): string {
  return layout(
    { title: "Feed status", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>Feed status</h1>
<p>Market data as this service receives it, at ${formatMyt(now)}. A stale coin is answered <code>stale</code> by the API until its feed resumes.</p>
${coins.length === 0
  ? html`<p>No coin has received data yet.</p>`
  : html`<table class="status">
<thead><tr><th scope="col">Coin</th><th scope="col">Feed</th><th scope="col">Base timeframe</th><th scope="col">Last closed candle (open)</th><th scope="col">Last update</th><th scope="col">Feeder</th></tr></thead>
<tbody>${coins.map(
    (c) => html`<tr data-symbol="${c.symbol}" data-state="${c.state}"><th scope="row">${c.symbol}</th><td>${c.state}</td><td>${c.baseTf}</td><td>${c.lastCandleOpenTime === null ? "none" : formatMyt(c.lastCandleOpenTime)}</td><td>${formatMyt(c.lastUpdateAt)}</td><td>${c.leased ? "leading" : "none"}</td></tr>`,
  )}</tbody>
</table>`}`,
  );
}
