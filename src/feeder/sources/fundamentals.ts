/**
 * Fundamentals from CoinGecko's /coins/markets: market cap, fully diluted valuation,
 * circulating / total / max supply, rank and all-time high per coin, every refresh (10
 * minutes by default) in ONE call for all coins (up to 250 ids), so a demo key's monthly
 * credits are far from used up.
 *
 * Keys: demo keys go to api.coingecko.com in `x-cg-demo-api-key`, pro keys to
 * pro-api.coingecko.com in `x-cg-pro-api-key` (config.ts refuses the crossed pairs; the
 * provider's 10010 / 10011 answers are explained if they still happen). Base codes map to
 * CoinGecko ids explicitly (src/config/coingecko-ids.ts, COINGECKO_IDS); a code missing there is looked
 * up in /coins/list, and when several coins share it, the best market-cap rank wins and the
 * choice is logged and reported.
 */
import type { FundamentalsConfig } from "../../config/sources.ts";
import { backoffMs } from "../../retry.ts";
import { expectOk, HttpStatusError, httpGet, readJson } from "./http-get.ts";
import { streamOf, summaryOf } from "./ingest-client.ts";
import type { PeriodicSource, SourceDeps } from "./source.ts";

export const COINGECKO_SOURCE = "CoinGecko";
/** /coins/list is re-read at most this often (it changes slowly and costs a call). */
const COIN_LIST_TTL_MS = 24 * 3_600_000;
const FIRST_RETRY_MS = 60_000;

/** The /coins/markets fields we read (CoinGecko's documented names). */
export interface MarketRow {
  id: string;
  symbol: string;
  market_cap: number | null;
  market_cap_rank: number | null;
  fully_diluted_valuation: number | null;
  circulating_supply: number | null;
  total_supply: number | null;
  max_supply: number | null;
  ath: number | null;
  ath_date: string | null;
  last_updated: string | null;
}

/** One ambiguous code and how it was resolved. */
export interface AmbiguousCode {
  symbol: string;
  candidates: string[];
  chosen: string;
}

export interface FundamentalsPushRow {
  symbol: string;
  time: bigint;
  circulatingSupply: number;
  maxSupply?: number;
  marketCapUsd: number;
  rank?: number;
  source: string;
  totalSupply?: number;
  fullyDilutedValuationUsd?: number;
  athUsd?: number;
  athTime?: bigint;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** The push row of one market row for `symbol`, or null when CoinGecko has no supply or market cap for it. Pure. */
export function fundamentalsRow(symbol: string, m: MarketRow, now: number): FundamentalsPushRow | null {
  const circulatingSupply = num(m.circulating_supply);
  const marketCapUsd = num(m.market_cap);
  if (circulatingSupply === undefined || marketCapUsd === undefined) return null;
  const updated = m.last_updated ? Date.parse(m.last_updated) : Number.NaN;
  const athTime = m.ath_date ? Date.parse(m.ath_date) : Number.NaN;
  const rank = num(m.market_cap_rank);
  return {
    symbol,
    // last_updated can trail our clock by minutes; a missing one means "as of this call".
    time: BigInt(Number.isFinite(updated) ? Math.min(updated, now) : now),
    circulatingSupply,
    maxSupply: num(m.max_supply),
    marketCapUsd,
    rank: rank !== undefined && Number.isInteger(rank) && rank >= 1 ? rank : undefined,
    source: COINGECKO_SOURCE,
    totalSupply: num(m.total_supply),
    fullyDilutedValuationUsd: num(m.fully_diluted_valuation),
    athUsd: num(m.ath) !== undefined && m.ath! > 0 ? m.ath! : undefined,
    athTime: Number.isFinite(athTime) && athTime > 0 ? BigInt(athTime) : undefined,
  };
}

/** CoinGecko's error body: {"status":{"error_code":…,"error_message":…}}, with the key-type trap explained. */
function describeCoinGeckoError(body: string): string {
  try {
    const parsed = JSON.parse(body) as { status?: { error_code?: number; error_message?: string }; error?: string };
    const code = parsed.status?.error_code;
    const message = parsed.status?.error_message ?? parsed.error ?? body;
    if (code === 10010) return `${message} (a pro key was sent to the demo host: set COINGECKO_PLAN=pro)`;
    if (code === 10011) return `${message} (a demo key was sent to the pro host: set COINGECKO_PLAN=demo)`;
    return code ? `${code} ${message}` : String(message);
  } catch {
    return body.slice(0, 200);
  }
}

export type FundamentalsSourceDeps = SourceDeps<FundamentalsConfig>;

/** The fundamentals source, with the ambiguous codes it resolved (for reports). */
export function createFundamentalsSource(
  deps: FundamentalsSourceDeps,
): PeriodicSource & { ambiguous(): AmbiguousCode[] } {
  const { config, clock, logger, report } = deps;
  let nextDueMs = 0;
  let failures = 0;
  let coinList: { at: number; bySymbol: Map<string, string[]> } | null = null;
  const ambiguous = new Map<string, AmbiguousCode>();
  const headers: Record<string, string> = { accept: "application/json" };
  if (config.apiKey) headers[config.plan === "pro" ? "x-cg-pro-api-key" : "x-cg-demo-api-key"] = config.apiKey;

  async function getJson<T>(path: string, signal: AbortSignal): Promise<T> {
    const res = await expectOk(
      await httpGet(`${config.apiBase}${path}`, { headers, timeoutMs: deps.timeoutMs, signal }),
      clock(),
      describeCoinGeckoError,
    );
    return readJson<T>(res);
  }

  /** Candidates per lower-case symbol for the codes without an explicit id. */
  async function candidatesOf(codes: string[], signal: AbortSignal): Promise<Map<string, string[]>> {
    if (codes.length === 0) return new Map();
    if (!coinList || clock() - coinList.at > COIN_LIST_TTL_MS) {
      const list = await getJson<Array<{ id: string; symbol: string }>>("/coins/list", signal);
      const bySymbol = new Map<string, string[]>();
      for (const c of list)
        bySymbol.set(c.symbol.toLowerCase(), [...(bySymbol.get(c.symbol.toLowerCase()) ?? []), c.id]);
      coinList = { at: clock(), bySymbol };
    }
    return new Map(codes.map((code) => [code, coinList!.bySymbol.get(code.toLowerCase()) ?? []]));
  }

  async function round(signal: AbortSignal): Promise<void> {
    const explicit = config.symbols.filter((s) => config.ids[s]);
    const unmapped = config.symbols.filter((s) => !config.ids[s]);
    const candidates = await candidatesOf(unmapped, signal);
    const ids = new Set([...explicit.map((s) => config.ids[s]!), ...[...candidates.values()].flat()]);
    if (ids.size === 0) throw new Error("none of FUNDAMENTALS_SYMBOLS is known to CoinGecko");
    const query = new URLSearchParams({
      vs_currency: "usd",
      ids: [...ids].join(","),
      per_page: "250",
      page: "1",
      precision: "full",
    });
    const markets = await getJson<MarketRow[]>(`/coins/markets?${query}`, signal);
    const byId = new Map(markets.map((m) => [m.id, m]));
    const now = clock();
    const rows: FundamentalsPushRow[] = [];
    const missing: string[] = [];
    for (const symbol of config.symbols) {
      let market = config.ids[symbol] ? byId.get(config.ids[symbol]!) : undefined;
      const options = candidates.get(symbol) ?? [];
      if (!config.ids[symbol]) {
        // Several coins share the ticker: the best (lowest) market-cap rank wins; unranked ones last.
        const ranked = options.map((id) => byId.get(id)).filter((m): m is MarketRow => m !== undefined);
        ranked.sort(
          (a, b) => (a.market_cap_rank ?? Infinity) - (b.market_cap_rank ?? Infinity) || a.id.localeCompare(b.id),
        );
        market = ranked[0];
        if (options.length > 1 && market) {
          const known = ambiguous.get(symbol);
          if (known?.chosen !== market.id)
            logger.warn(
              { symbol, candidates: options, chosen: market.id },
              "ambiguous ticker resolved by market-cap rank; pin it with COINGECKO_IDS",
            );
          ambiguous.set(symbol, { symbol, candidates: options, chosen: market.id });
        }
      }
      const row = market ? fundamentalsRow(symbol, market, now) : null;
      if (row) rows.push(row);
      else missing.push(symbol);
    }
    if (missing.length > 0) logger.warn({ symbols: missing }, "CoinGecko has no market data for these codes");
    if (rows.length === 0) throw new Error(`CoinGecko returned no usable rows for ${config.symbols.join(",")}`);
    const res = summaryOf(await deps.ingest.pushFundamentals(streamOf(rows), { signal }));
    logger.info({ rows: rows.length, ...res }, "fundamentals pushed");
    if (res.rejected > 0) logger.warn({ reasons: res.reasons }, "fundamentals rows refused by the service");
  }

  return {
    name: "fundamentals",
    ambiguous: () => [...ambiguous.values()],
    async poll(signal) {
      const now = clock();
      if (now < nextDueMs) return;
      try {
        await round(signal);
        failures = 0;
        nextDueMs = now + config.refreshMs;
        report.success();
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        // 429: wait what CoinGecko asks (Retry-After), and never less than the back-off.
        const retryAfter = err instanceof HttpStatusError ? (err.retryAfterMs ?? 0) : 0;
        nextDueMs = now + Math.max(backoffMs(failures, FIRST_RETRY_MS, config.refreshMs, "none"), retryAfter);
        report.failure(`CoinGecko: ${(err as Error).message}`);
        logger.warn({ failures, retryInMs: nextDueMs - now, err: (err as Error).message }, "fundamentals round failed");
      }
    },
  };
}
