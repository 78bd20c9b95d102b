/**
 * REST JSON of the free endpoints, in the style of the paid endpoint's mapping
 * (src/server/rest-json.ts): proto field names (snake_case), int64 fields (`ts`, `time`,
 * `updated_at`) as JSON numbers of epoch milliseconds, `signal` as the enum name without its
 * SIGNAL_ prefix, unset optional fields as null (never omitted), and every field always present.
 */
import type {
  DerivativesRow,
  FundamentalsRow,
  GetDerivativesResponse,
  GetFundamentalsResponse,
  GetMacroResponse,
  GetMoversResponse,
  GetNewsResponse,
  MacroPoint,
  Mover,
  NewsItem,
} from "../../gen/signals/v1/market_data_pb.js";
import { signalName } from "../server/rest-json.ts";

const n = (v: bigint) => Number(v);

function moverJson(m: Mover): Record<string, unknown> {
  return {
    symbol: m.symbol,
    price: m.price,
    change_pct: m.changePct,
    change_24h_pct: m.change24hPct ?? null,
    volume: m.volume,
    volume_24h: m.volume24h,
    signal: signalName(m.signal),
    updated_at: n(m.updatedAt),
  };
}

/** The 200 body of GET /api/v1/movers. */
export function getMoversResponseJson(r: GetMoversResponse): Record<string, unknown> {
  return { ok: r.ok, tf: r.tf, ts: n(r.ts), gainers: r.gainers.map(moverJson), losers: r.losers.map(moverJson), volume_leaders: r.volumeLeaders.map(moverJson) };
}

function derivativesRowJson(d: DerivativesRow): Record<string, unknown> {
  return {
    symbol: d.symbol,
    venue: d.venue,
    funding_rate: d.fundingRate ?? null,
    open_interest_usd: d.openInterestUsd ?? null,
    long_short_ratio: d.longShortRatio ?? null,
    time: n(d.time),
    updated_at: n(d.updatedAt),
  };
}

/** The 200 body of GET /api/v1/derivatives. */
export function getDerivativesResponseJson(r: GetDerivativesResponse): Record<string, unknown> {
  return { ok: r.ok, ts: n(r.ts), rows: r.rows.map(derivativesRowJson), next_cursor: r.nextCursor ?? null };
}

function newsItemJson(i: NewsItem): Record<string, unknown> {
  return { id: i.id, time: n(i.time), title: i.title, source: i.source, url: i.url, coins: [...i.coins], updated_at: n(i.updatedAt) };
}

/** The 200 body of GET /api/v1/news. */
export function getNewsResponseJson(r: GetNewsResponse): Record<string, unknown> {
  return { ok: r.ok, ts: n(r.ts), items: r.items.map(newsItemJson), next_cursor: r.nextCursor ?? null };
}

function macroPointJson(p: MacroPoint): Record<string, unknown> {
  return { series: p.series, time: n(p.time), value: p.value, unit: p.unit, source: p.source, updated_at: n(p.updatedAt) };
}

/** The 200 body of GET /api/v1/macro. */
export function getMacroResponseJson(r: GetMacroResponse): Record<string, unknown> {
  return { ok: r.ok, ts: n(r.ts), points: r.points.map(macroPointJson), next_cursor: r.nextCursor ?? null };
}

function fundamentalsRowJson(f: FundamentalsRow): Record<string, unknown> {
  return {
    symbol: f.symbol,
    circulating_supply: f.circulatingSupply,
    max_supply: f.maxSupply ?? null,
    total_supply: f.totalSupply ?? null,
    market_cap_usd: f.marketCapUsd,
    fully_diluted_valuation_usd: f.fullyDilutedValuationUsd ?? null,
    rank: f.rank ?? null,
    ath_usd: f.athUsd ?? null,
    ath_time: f.athTime === undefined ? null : n(f.athTime),
    source: f.source,
    time: n(f.time),
    updated_at: n(f.updatedAt),
  };
}

/** The 200 body of GET /api/v1/fundamentals. */
export function getFundamentalsResponseJson(r: GetFundamentalsResponse): Record<string, unknown> {
  return { ok: r.ok, ts: n(r.ts), rows: r.rows.map(fundamentalsRowJson), next_cursor: r.nextCursor ?? null };
}
