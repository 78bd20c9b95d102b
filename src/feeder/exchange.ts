/**
 * The feeder's ccxt exchanges: public market data only (no keys). Spot candles come from the
 * websocket class (`ccxt.pro`), derivatives from the REST class of the same exchange. Base URLs
 * can be moved to a mirror or a local fake; rate-limit answers pause every REST call (limits
 * are per IP, so one coin's 429 concerns all of them).
 */
import { Agent } from "node:http";
import { retryAfterMs } from "../retry.ts";

/** Raw OHLCV row as ccxt returns it: [openTime, open, high, low, close, volume]. */
export type OhlcvRow = [number, number, number, number, number, number];

/** One kline message as the stream delivered it: the market, the row, and whether the exchange closed the candle. */
export interface KlineMessage {
  readonly market: string;
  readonly timeframe: string;
  readonly row: OhlcvRow;
  /** Binance's `k.x`: the exchange marked this candle closed. */
  readonly closed: boolean;
}

/** What the feeder uses of a ccxt pro exchange, plus the stream hooks and the cool-down. */
export interface SpotExchange {
  readonly id: string;
  loadMarkets(): Promise<Record<string, unknown>>;
  readonly markets: Record<string, { base?: string; quote?: string; spot?: boolean; active?: boolean | undefined }>;
  fetchOHLCV(
    symbol: string,
    timeframe: string,
    since?: number,
    limit?: number,
    params?: Record<string, unknown>,
  ): Promise<OhlcvRow[]>;
  /** ccxt's multiplexed kline watch: one SUBSCRIBE carrying every stream of the list. */
  watchOHLCVForSymbols(symbolsAndTimeframes: string[][]): Promise<unknown>;
  unWatchOHLCVForSymbols(symbolsAndTimeframes: string[][]): Promise<unknown>;
  has: Record<string, unknown>;
  close(): Promise<unknown>;
  /** Called with every kline message, in arrival order, before ccxt files it. */
  onKline: ((message: KlineMessage) => void) | null;
  /** Called when a websocket connection ends (drop, close frame, error). */
  onSocketLost: ((url: string, error: unknown) => void) | null;
  /** Epoch ms before which no REST call is made (Retry-After of a 429 / 418). */
  coolDownUntil: number;
}

/** The derivatives side: ccxt's unified funding / open interest / long-short calls. */
export interface FuturesExchange {
  readonly id: string;
  loadMarkets(): Promise<Record<string, unknown>>;
  readonly markets: Record<string, { base?: string; quote?: string; swap?: boolean; linear?: boolean }>;
  has: Record<string, unknown>;
  fetchFundingRate(symbol: string): Promise<{ fundingRate?: number; timestamp?: number }>;
  fetchOpenInterest(
    symbol: string,
  ): Promise<{ openInterestValue?: number; openInterestAmount?: number; timestamp?: number }>;
  fetchLongShortRatioHistory(
    symbol: string,
    timeframe?: string,
    since?: number,
    limit?: number,
  ): Promise<Array<{ longShortRatio?: number; timestamp?: number }>>;
  coolDownUntil: number;
}

export interface ExchangeUrls {
  /** Replaces the scheme, host and port (and prefixes the path) of every REST URL. */
  readonly restUrl: string | null;
  /** Same for every websocket URL. */
  readonly wsUrl: string | null;
}

/** Rewrites every URL string under `node` whose scheme is in `schemes` onto `base`. */
function rebase(node: unknown, base: string, schemes: string[]): unknown {
  if (typeof node === "string") {
    if (!schemes.some((s) => node.startsWith(s))) return node;
    const url = new URL(node);
    return base.replace(/\/+$/, "") + url.pathname.replace(/\/+$/, "") + url.search;
  }
  if (node && typeof node === "object") {
    const out: Record<string, unknown> = Array.isArray(node) ? ([] as unknown as Record<string, unknown>) : {};
    for (const [key, value] of Object.entries(node)) out[key] = rebase(value, base, schemes);
    return out;
  }
  return node;
}

function rebasedUrls(urls: Record<string, unknown>, overrides: ExchangeUrls): Record<string, unknown> {
  const api = urls.api as Record<string, unknown>;
  const { ws, ...rest } = api;
  const restApi = overrides.restUrl
    ? (rebase(rest, overrides.restUrl, ["https://", "http://"]) as Record<string, unknown>)
    : rest;
  const wsApi = overrides.wsUrl && ws ? rebase(ws, overrides.wsUrl, ["wss://", "ws://"]) : ws;
  return { ...urls, api: { ...restApi, ...(wsApi ? { ws: wsApi } : {}) } };
}

/** The Retry-After of a ccxt error's response headers, in ms (0 when none). */
function coolDownMs(headers: unknown): number {
  const raw =
    headers && typeof headers === "object"
      ? ((headers as Record<string, unknown>)["retry-after"] ?? (headers as Record<string, unknown>)["Retry-After"])
      : undefined;
  return typeof raw === "string" || typeof raw === "number" ? (retryAfterMs(String(raw)) ?? 0) : 0;
}

// biome-ignore lint/suspicious/noExplicitAny: ccxt's classes are loaded by name at run time, untyped
type AnyClass = new (config: Record<string, unknown>) => Record<string, any>;

/** ccxt's classes of the exchanges loaded so far: the websocket one (`pro`) and the REST one. */
const loaded = new Map<string, { pro: AnyClass | null; rest: AnyClass | null }>();

/**
 * ccxt's error classes, from the very module its exchange classes throw (loaded by file like
 * them, see loadExchange; a second copy would make `instanceof` fail). The module is small.
 */
export const ccxtErrors = (await import(
  new URL("./src/base/errors.js", import.meta.resolve("ccxt")).href
)) as typeof import("ccxt");
const { NetworkError } = ccxtErrors;

/**
 * Loads ccxt's classes of one exchange. `import("ccxt")` evaluates every exchange ccxt has:
 * 128 MiB of RSS against 80 MiB for Binance's alone (the feeder's V8 flags, measured), for a
 * process that uses one.
 */
export async function loadExchange(id: string): Promise<void> {
  if (loaded.has(id)) return;
  const sources = new URL("./src/", import.meta.resolve("ccxt"));
  const load = async (path: string): Promise<AnyClass | null> => {
    if (!/^[a-z0-9]+$/.test(id)) return null;
    try {
      const found = ((await import(new URL(path, sources).href)) as { default?: unknown }).default;
      return typeof found === "function" ? (found as AnyClass) : null;
    } catch (err) {
      if ((err as { code?: string }).code === "ERR_MODULE_NOT_FOUND") return null;
      throw err;
    }
  };
  loaded.set(id, { pro: await load(`pro/${id}.js`), rest: await load(`${id}.js`) });
}

function classOf(kind: "pro" | "rest", id: string): AnyClass | null {
  const classes = loaded.get(id);
  if (!classes) throw new Error(`loadExchange("${id}") first`);
  return classes[kind];
}

/** Creates the spot exchange (websocket + REST), markets not yet loaded. */
export function createSpotExchange(id: string, urls: ExchangeUrls): SpotExchange {
  const Base = classOf("pro", id);
  if (!Base) throw new Error(`ccxt has no websocket exchange "${id}"`);
  class Spot extends Base {
    coolDownUntil = 0;
    onKline: ((message: KlineMessage) => void) | null = null;
    onSocketLost: ((url: string, error: unknown) => void) | null = null;
    // Every kline message goes to the feeder as it arrives, with Binance's closed mark (k.x),
    // which ccxt drops; ccxt's own futures resolve only for whoever awaits at that moment, so
    // with hundreds of coins on one socket they would miss updates.
    handleOHLCV(
      client: unknown,
      message: {
        k?: {
          x?: boolean;
          t?: number;
          s?: string;
          i?: string;
          o?: string;
          h?: string;
          l?: string;
          c?: string;
          v?: string;
        };
      },
    ) {
      const k = message?.k;
      if (this.onKline && k?.t !== undefined && k.s) {
        const market = this.safeMarket?.(k.s, undefined, undefined, "spot");
        const timeframe = this.findTimeframe?.(k.i);
        const row: OhlcvRow = [
          k.t,
          parseFloat(k.o ?? ""),
          parseFloat(k.h ?? ""),
          parseFloat(k.l ?? ""),
          parseFloat(k.c ?? ""),
          parseFloat(k.v ?? ""),
        ];
        this.onKline({ market: market?.symbol, timeframe, row, closed: k.x === true });
      }
      return super.handleOHLCV(client, message);
    }
    // ccxt keeps a client whose socket closed with an error, so the next watch would wait on a
    // dead socket forever; forgetting it makes the next watch open a new connection.
    // The feeder hears of each lost socket once: from the first of error and close that finds
    // the client still current (ccxt forgets a client on error; the close then comes for a stranger).
    onClose(client: { url: string }, error: unknown) {
      const clients = this.clients as Record<string, unknown>;
      const current = clients[client.url] === client;
      if (current) delete clients[client.url];
      const result = super.onClose(client, error);
      // `error` is the close event here; ccxt's own error for it (a NetworkError) is on the client.
      if (current)
        this.onSocketLost?.(
          client.url,
          (client as { error?: unknown }).error ?? new NetworkError(`websocket ${client.url} closed`),
        );
      return result;
    }
    onError(client: { url: string }, error: unknown) {
      const clients = this.clients as Record<string, unknown>;
      const current = clients[client.url] === client;
      const result = super.onError(client, error);
      if (current) this.onSocketLost?.(client.url, error);
      return result;
    }
    // ccxt sends a subscription once the socket opened without handling a failed send (the
    // socket closed in between): an unhandled rejection. The watch itself fails on the close.
    client(url: string) {
      const client = super.client(url) as { send(message: unknown): Promise<unknown>; sendGuarded?: boolean };
      if (!client.sendGuarded) {
        const send = client.send.bind(client);
        client.send = (message) => {
          const sent = send(message);
          sent.catch(() => {});
          return sent;
        };
        client.sendGuarded = true;
      }
      return client;
    }
    // ccxt tells spot from futures streams by the URL ("/stream"); this instance only watches spot.
    isSpotUrl() {
      return true;
    }
    handleErrors(code: number, ...rest: unknown[]) {
      if (code === 429 || code === 418)
        this.coolDownUntil = Math.max(this.coolDownUntil, Date.now() + coolDownMs(rest[3]));
      return super.handleErrors(code, ...rest);
    }
  }
  const probe = new Base({});
  return new Spot({
    enableRateLimit: true,
    // ccxt wants an explicit agent before it opens a plain ws:// socket (a local mirror or fake).
    ...(urls.wsUrl?.startsWith("ws://") ? { httpAgent: new Agent({ keepAlive: true }) } : {}),
    timeout: 10_000,
    urls: rebasedUrls(probe.urls as Record<string, unknown>, urls),
    // OHLCVLimit: ccxt's own cache of streamed candles per coin, unread (messages reach the
    // feeder through onKline); 1,000 rows × 400 coins would be tens of MB kept for nothing.
    // ws.cost: ccxt spaces each socket's control messages by cost × rateLimit (50 ms); 10 keeps
    // them at about 2 a second even when subscriptions queued during a reconnect are released
    // together (Binance cuts a connection at more than 5 incoming frames a second).
    options: {
      defaultType: "spot",
      fetchMarkets: { types: ["spot"] },
      fetchMargins: false,
      fetchCurrencies: false,
      OHLCVLimit: 2,
      ws: { cost: 10 },
    },
  }) as unknown as SpotExchange;
}

/** Creates the perpetual-futures side of the exchange, or null when ccxt offers no funding rates there. */
export function createFuturesExchange(id: string, urls: ExchangeUrls): FuturesExchange | null {
  const Base = classOf("rest", id);
  if (!Base) return null;
  class Futures extends Base {
    coolDownUntil = 0;
    handleErrors(code: number, ...rest: unknown[]) {
      if (code === 429 || code === 418)
        this.coolDownUntil = Math.max(this.coolDownUntil, Date.now() + coolDownMs(rest[3]));
      return super.handleErrors(code, ...rest);
    }
  }
  const probe = new Base({});
  if (!probe.has?.fetchFundingRate) return null;
  return new Futures({
    enableRateLimit: true,
    timeout: 10_000,
    urls: rebasedUrls(probe.urls as Record<string, unknown>, urls),
    options: { defaultType: "swap", fetchMarkets: { types: ["linear"] }, fetchMargins: false, fetchCurrencies: false },
  }) as unknown as FuturesExchange;
}
