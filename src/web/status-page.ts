/**
 * The public /status page (no sign-in): each coin's feed state as the service sees it, from
 * its own store: `stale` when no update arrived for STALE_AFTER (the API answers `stale` too),
 * `backfilling` when updates arrive but the stored history is more than a candle behind now,
 * `live` otherwise; with its last closed candle and whether a feeder holds its lease. Then the
 * free context datasets with the time of their newest stored row and when rows last arrived.
 */
import { sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { DEMO_DATA_LABEL } from "../market/provenance.ts";
import { isTimeframe, TIMEFRAME_MS } from "../market/timeframes.ts";
import type { PageContext } from "./auth-pages.ts";
import { formatMyt } from "./format.ts";
import { html, layout } from "./html.ts";

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
  /** The coin's history is the demo feed's synthetic prices. */
  demo: boolean;
}

/** The feed state of a coin from its times (pure). */
export function feedState(
  now: number,
  lastUpdateAt: number,
  lastCandleOpenTime: number | null,
  baseMs: number,
  staleAfterMs: number,
): FeedState {
  if (now - lastUpdateAt > staleAfterMs) return "stale";
  // The candle after the last stored one should have closed by now (a minute of grace): catching up.
  if (lastCandleOpenTime === null || lastCandleOpenTime + 2 * baseMs + 60_000 < now) return "backfilling";
  return "live";
}

/**
 * Reads every coin's feed status from the store, sorted by symbol (or only `symbol`'s, for its chart page's banner).
 */
export async function loadFeedStatus(
  db: DbHandle,
  now: number,
  staleAfterMs: number,
  symbol?: string,
): Promise<CoinFeedStatus[]> {
  const rows = await db.rows<{
    symbol: string;
    base_tf: string;
    last_update_ms: number;
    last_candle: number | null;
    leased: boolean;
    demo: boolean;
  }>(sql`
    SELECT c.symbol, c.base_tf, c.demo,
      (extract(epoch FROM c.last_update_at) * 1000)::float8 AS last_update_ms,
      (SELECT max(k.open_time) FROM candles k WHERE k.symbol = c.symbol AND k.tf = c.base_tf AND k.closed)::float8
      AS last_candle,
      EXISTS (SELECT 1 FROM feed_leases l WHERE l.symbol = c.symbol AND l.expires_at > now()) AS leased
    FROM coins c ${symbol === undefined ? sql`` : sql`WHERE c.symbol = ${symbol}`} ORDER BY c.symbol`);
  return rows.map((r) => {
    const lastCandle = r.last_candle === null ? null : Number(r.last_candle);
    const lastUpdateAt = Number(r.last_update_ms);
    return {
      symbol: r.symbol,
      baseTf: r.base_tf,
      state: feedState(
        now,
        lastUpdateAt,
        lastCandle,
        isTimeframe(r.base_tf) ? TIMEFRAME_MS[r.base_tf] : TIMEFRAME_MS["1h"],
        staleAfterMs,
      ),
      lastCandleOpenTime: lastCandle,
      lastUpdateAt,
      leased: Boolean(r.leased),
      demo: r.demo === true,
    };
  });
}

/** One free dataset on the /status page. */
export interface ContextDataStatus {
  dataset: "movers" | "derivatives" | "news" | "fundamentals" | "macro";
  /** The newest stored row's own time (epoch ms): publication, observation or source time; null when empty. */
  newestMs: number | null;
  /** When a row was last written (epoch ms), or null. */
  receivedMs: number | null;
  /**
   * Which provenances the stored rows have: demo (the demo feed's samples), real, or both (demo for some coins only).
   */
  provenance: { demo: boolean; real: boolean };
}

/** The table behind each free dataset (movers are computed from the coins' candles). */
const DATASET_TABLES = {
  movers: sql`coins`,
  derivatives: sql`derivatives_readings`,
  news: sql`news_items`,
  fundamentals: sql`coin_fundamentals`,
  macro: sql`macro_points`,
} as const;

/**
 * Reads the newest row time of each free dataset and the provenance of its rows; movers are computed from the candles.
 */
export async function loadContextDataStatus(db: DbHandle): Promise<ContextDataStatus[]> {
  const [r] = await db.rows<Record<string, number | string | boolean | null>>(sql`
    SELECT
      (SELECT max(open_time) FROM candles WHERE closed)::float8 AS movers_newest,
      (extract(epoch FROM (SELECT max(last_update_at) FROM coins)) * 1000)::float8 AS movers_received,
      (SELECT max(time) FROM derivatives_readings)::float8 AS derivatives_newest,
      (extract(epoch FROM (SELECT max(updated_at) FROM derivatives_readings)) * 1000)::float8 AS derivatives_received,
      (SELECT max(time) FROM news_items)::float8 AS news_newest,
      (extract(epoch FROM (SELECT max(updated_at) FROM news_items)) * 1000)::float8 AS news_received,
      (SELECT max(time) FROM coin_fundamentals)::float8 AS fundamentals_newest,
      (extract(epoch FROM (SELECT max(updated_at) FROM coin_fundamentals)) * 1000)::float8 AS fundamentals_received,
      (SELECT max(time) FROM macro_points)::float8 AS macro_newest,
      (extract(epoch FROM (SELECT max(updated_at) FROM macro_points)) * 1000)::float8 AS macro_received,
      ${sql.join(
        Object.entries(DATASET_TABLES).map(
          ([name, table]) =>
            sql`EXISTS (SELECT 1 FROM ${table} WHERE demo) AS ${sql.raw(`${name}_demo`)}, EXISTS (SELECT 1 FROM ${table}
              WHERE NOT demo) AS ${sql.raw(`${name}_real`)}`,
        ),
        sql`, `,
      )}`);
  const at = (v: number | string | boolean | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return (["movers", "derivatives", "news", "fundamentals", "macro"] as const).map((dataset) => ({
    dataset,
    newestMs: at(r?.[`${dataset}_newest`]),
    receivedMs: at(r?.[`${dataset}_received`]),
    provenance: { demo: r?.[`${dataset}_demo`] === true, real: r?.[`${dataset}_real`] === true },
  }));
}

const CONTEXT_NOTES: Record<ContextDataStatus["dataset"], string> = {
  movers: "computed from the stored candles on each request (newest closed candle's open)",
  derivatives: "funding, open interest and long/short ratio from the feeder's exchange",
  news: "headlines from the configured news feeds (publication time)",
  fundamentals: "supply and market capitalisation from CoinGecko",
  macro: "FRED series (observation date)",
};

/** What a dataset is, as its rows' provenance allows saying: demo rows never pass for the real source. */
export function contextNote(d: ContextDataStatus): string {
  if (d.provenance.demo && !d.provenance.real)
    return `${DEMO_DATA_LABEL}: sample rows from the demo feed, not real figures`;
  if (d.provenance.demo) return `${CONTEXT_NOTES[d.dataset]}; rows of the demo feed's coins are ${DEMO_DATA_LABEL}`;
  return CONTEXT_NOTES[d.dataset];
}

/** The /status page. */
export function renderStatusPage(
  ctx: PageContext,
  coins: readonly CoinFeedStatus[],
  now: number,
  context: readonly ContextDataStatus[] = [],
): string {
  return layout(
    { title: "Feed status", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>Feed status</h1>
<p>Market data as this service receives it, at ${formatMyt(now)}. A stale coin is answered <code>stale</code> by the \
API until its feed resumes.</p>
${
  coins.length === 0
    ? html`<p>No coin has received data yet.</p>`
    : html`<table class="status">
<thead><tr><th scope="col">Coin</th><th scope="col">Feed</th><th scope="col">Data</th>
<th scope="col">Base timeframe</th><th scope="col">Last closed candle (open)</th><th scope="col">Last update</th>
<th scope="col">Feeder</th></tr></thead>
<tbody>${coins.map(
        (c) =>
          html`<tr data-symbol="${c.symbol}" data-state="${c.state}" data-demo="${String(c.demo)}">\
<th scope="row">${c.symbol}</th><td>${c.state}</td><td>${c.demo ? DEMO_DATA_LABEL : "real market"}</td>\
<td>${c.baseTf}</td><td>${c.lastCandleOpenTime === null ? "none" : formatMyt(c.lastCandleOpenTime)}</td>\
<td>${formatMyt(c.lastUpdateAt)}</td><td>${c.leased ? "leading" : "none"}</td></tr>`,
      )}</tbody>
</table>`
}
${
  context.length === 0
    ? ""
    : html`<h2>Context data</h2>
<p>The free datasets the API serves, with the time of the newest stored row and when rows last arrived.</p>
<table class="status">
<thead><tr><th scope="col">Dataset</th><th scope="col">Newest row</th><th scope="col">Last received</th>
<th scope="col">What it is</th></tr></thead>
<tbody>${context.map(
        (d) =>
          html`<tr data-dataset="${d.dataset}"><th scope="row">${d.dataset}</th>\
<td>${d.newestMs === null ? "none" : formatMyt(d.newestMs)}</td>\
<td>${d.receivedMs === null ? "none" : formatMyt(d.receivedMs)}</td><td>${contextNote(d)}</td></tr>`,
      )}</tbody>
</table>`
}`,
  );
}
