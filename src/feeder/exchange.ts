/**
 * The feeder's ccxt exchanges: public market data only (no keys). Spot candles come from the
 * websocket class (`ccxt.pro`), derivatives from the REST class of the same exchange. Base URLs
 * can be moved to a mirror or a local fake; rate-limit answers pause every REST call (limits
 * are per IP, so one coin's 429 concerns all of them).
 */
import { Agent } from "node:http";
import ccxt from "ccxt";

/** Raw OHLCV row as ccxt returns it: [openTime, open, high, low, close, volume]. */
export type OhlcvRow = [number, number, number, number, number, number];

/** What the feeder uses of a ccxt pro exchange, plus the closed marks and the cool-down. */
export interface SpotExchange {
  readonly id: string;
  loadMarkets(): Promise<Record<string, unknown>>;
  readonly markets: Record<string, { base?: string; quote?: string; spot?: boolean; active?: boolean | undefined }>;
  fetchOHLCV(symbol: string, timeframe: string, since?: number, limit?: number, params?: Record<string, unknown>): Promise<OhlcvRow[]>;
  watchOHLCV(symbol: string, timeframe: string): Promise<OhlcvRow[]>;
  unWatchOHLCV?(symbol: string, timeframe: string): Promise<unknown>;
  has: Record<string, unknown>;
  close(): Promise<unknown>;
  /**
   * The final values of candles the exchange marked closed on the stream, by
   * `${symbol}|${timeframe}|${openTime}`: taken from the closing message itself, so a row read
   * before the close arrived can never be pushed as closed.
   */
  readonly closedMarks: Map<string, OhlcvRow>;
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
  fetchOpenInterest(symbol: string): Promise<{ openInterestValue?: number; openInterestAmount?: number; timestamp?: number }>;
  fetchLongShortRatioHistory(symbol: string, timeframe?: string, since?: number, limit?: number): Promise<Array<{ longShortRatio?: number; timestamp?: number }>>;
  coolDownUntil: number;
}

export interface ExchangeUrls {
  /** Replaces the scheme, host and port (and prefixes the path) of every REST URL. */
  readonly restUrl: string | null;
  /** Same for every websocket URL. */
  readonly wsUrl: string | null;
}

const CLOSED_MARKS_KEPT = 10_000;

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
  const restApi = overrides.restUrl ? (rebase(rest, overrides.restUrl, ["https://", "http://"]) as Record<string, unknown>) : rest;
  const wsApi = overrides.wsUrl && ws ? rebase(ws, overrides.wsUrl, ["wss://", "ws://"]) : ws;
  return { ...urls, api: { ...restApi, ...(wsApi ? { ws: wsApi } : {}) } };
}

function retryAfterMs(headers: unknown): number {
  const raw = headers && typeof headers === "object" ? ((headers as Record<string, unknown>)["retry-after"] ?? (headers as Record<string, unknown>)["Retry-After"]) : undefined;
  const seconds = Number(raw);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

type AnyClass = new (config: Record<string, unknown>) => Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function classOf(namespace: unknown, id: string): AnyClass | null {
  const found = (namespace as Record<string, unknown>)[id];
  return typeof found === "function" ? (found as AnyClass) : null;
}

/** True when ccxt knows the exchange and has websocket support for it. */
export function isKnownExchange(id: string): boolean {
  return classOf(ccxt.pro, id) !== null;
}

/** Creates the spot exchange (websocket + REST), markets not yet loaded. */
export function createSpotExchange(id: string, urls: ExchangeUrls): SpotExchange {
  const Base = classOf(ccxt.pro, id);
  if (!Base) throw new Error(`ccxt has no websocket exchange "${id}"`);
  class Spot extends Base {
    closedMarks = new Map<string, OhlcvRow>();
    coolDownUntil = 0;
    // Binance's kline message says when the exchange closed a candle (k.x); ccxt keeps only
    // the values (in rows it later overwrites in place), so the mark and the closing message's
    // own values are recorded here before ccxt files the update.
    handleOHLCV(client: unknown, message: { k?: { x?: boolean; t?: number; s?: string; i?: string; o?: string; h?: string; l?: string; c?: string; v?: string } }) {
      const k = message?.k;
      if (k?.x === true && k.t !== undefined && k.s) {
        const market = (this as Record<string, any>).safeMarket?.(k.s, undefined, undefined, "spot"); // eslint-disable-line @typescript-eslint/no-explicit-any
        const timeframe = (this as Record<string, any>).findTimeframe?.(k.i); // eslint-disable-line @typescript-eslint/no-explicit-any
        this.closedMarks.set(`${market?.symbol}|${timeframe}|${k.t}`, [k.t, Number(k.o), Number(k.h), Number(k.l), Number(k.c), Number(k.v)]);
        if (this.closedMarks.size > CLOSED_MARKS_KEPT) this.closedMarks.delete(this.closedMarks.keys().next().value as string);
      }
      return super.handleOHLCV(client, message);
    }
    // ccxt keeps a client whose socket closed with an error, so the next watch would wait on a
    // dead socket forever; forgetting it makes the next watch open a new connection.
    onClose(client: { url: string }, error: unknown) {
      const clients = (this as Record<string, any>).clients as Record<string, unknown>; // eslint-disable-line @typescript-eslint/no-explicit-any
      if (clients[client.url] === client) delete clients[client.url];
      return super.onClose(client, error);
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
      if (code === 429 || code === 418) this.coolDownUntil = Math.max(this.coolDownUntil, Date.now() + retryAfterMs(rest[3]));
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
    options: { defaultType: "spot", fetchMarkets: { types: ["spot"] }, fetchMargins: false, fetchCurrencies: false, OHLCVLimit: 1000 },
  }) as unknown as SpotExchange;
}

/** Creates the perpetual-futures side of the exchange, or null when ccxt offers no funding rates there. */
export function createFuturesExchange(id: string, urls: ExchangeUrls): FuturesExchange | null {
  const Base = classOf(ccxt, id);
  if (!Base) return null;
  class Futures extends Base {
    coolDownUntil = 0;
    handleErrors(code: number, ...rest: unknown[]) {
      if (code === 429 || code === 418) this.coolDownUntil = Math.max(this.coolDownUntil, Date.now() + retryAfterMs(rest[3]));
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
