/**
 * A local fake of Binance's public market data, for the feeder's tests: a real HTTP server
 * (spot `/api/v3/exchangeInfo`, `/api/v3/klines`, `/api/v3/time`, and the USD-M futures
 * endpoints ccxt reads for derivatives) plus a real websocket server speaking the kline stream
 * (`{"method":"SUBSCRIBE","params":["btcusdt@kline_1h"],"id":1}`, then `{"e":"kline",…,"k":{…,"x":…}}`),
 * on 127.0.0.1 port 0. It serves real candles re-timed so that the forming one contains now;
 * the test moves the market on (ticks, closes) and injects faults (REST errors, dropped
 * sockets, a silent coin, a revised closed candle). It holds clients to Binance's websocket
 * limits (1,024 streams per connection, 5 incoming messages a second, pings and pongs
 * included): a connection beyond either is cut, and the breach is recorded (`wsStats`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import type { Candle } from "../../src/engine/candle.ts";

export interface FakeCoin {
  /** Base code, e.g. "BTC". */
  readonly base: string;
  /** Real candles of one timeframe, oldest first; re-timed on start. */
  readonly candles: readonly Candle[];
}

export interface FakeExchangeOptions {
  readonly coins: readonly FakeCoin[];
  /** The timeframe served (`1m`, `15m`, `1h` …); klines of other intervals are empty. */
  readonly interval: string;
  readonly intervalMs: number;
  /** Closed candles before the forming one at start (the rest are the future). */
  readonly history: number;
  /** Start of the forming candle at start (default: the interval containing now). */
  readonly startOpenTime?: number;
  /** Serve USD-M futures (derivatives) for these bases too. */
  readonly futures?: boolean;
  /** Address to listen on (default 127.0.0.1); a test network's address makes it reachable from other namespaces. */
  readonly host?: string;
}

/** Binance's websocket limits, as the fake enforces them. */
export const WS_MAX_STREAMS_PER_CONNECTION = 1024;
export const WS_MAX_INCOMING_PER_SECOND = 5;

/** What the websocket side has seen, for benches and tests that check the limits were kept. */
export interface WsStats {
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections open now. */
  readonly open: number;
  /** Most connections open at once. */
  readonly maxOpen: number;
  /** Most streams one connection was subscribed to at once. */
  readonly maxStreamsOnOneConnection: number;
  /** Most incoming frames (messages, pings, pongs) one connection sent within one second. */
  readonly maxIncomingInOneSecond: number;
  /** SUBSCRIBE / UNSUBSCRIBE messages received. */
  readonly controlMessages: number;
  /** Most streams named in one SUBSCRIBE. */
  readonly maxStreamsInOneMessage: number;
  /** Each limit a client broke (its connection was cut for it). */
  readonly breaches: readonly string[];
}

/** A scripted REST answer: status, body, headers. */
export interface RestFault {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

interface CoinState {
  readonly base: string;
  readonly id: string;
  /** Every candle of the series, re-timed; index `cursor` is the forming one. */
  readonly series: Candle[];
  cursor: number;
  /** Fraction of the forming candle revealed (0 < f <= 1). */
  revealed: number;
  silent: boolean;
  withholdCloses: boolean;
}

export interface FakeExchange {
  readonly restUrl: string;
  readonly wsUrl: string;
  /** The exchange's present: the forming candle's open time (of the first coin) plus a second. */
  now(): number;
  /** Closed candles of a coin as the exchange serves them now (oldest first). */
  closed(base: string): Candle[];
  /** The forming candle of a coin as last revealed. */
  forming(base: string): Candle;
  /** Reveals more of each forming candle and streams the update (x:false). */
  tick(bases?: readonly string[]): void;
  /** Closes each coin's forming candle (streams x:true) and opens the next (first update). */
  closeCandles(bases?: readonly string[]): void;
  /** Changes a closed candle in the REST history only (a revision the audit must find). */
  revise(base: string, openTime: number, change: Partial<Candle>): void;
  /**
   * Stops (true) or resumes sending a coin's closing update (x:true): only the next candle's updates show the close.
   */
  withholdCloses(base: string, withhold: boolean): void;
  /** Stops (true) or resumes streaming a coin; its socket stays open. */
  silence(base: string, silent: boolean): void;
  /** Terminates every open websocket (a network drop). */
  dropSockets(): void;
  /** The next REST requests get these answers, in order. */
  failRest(...faults: RestFault[]): void;
  /** REST requests served so far, by path. */
  readonly restCalls: Map<string, number>;
  /** Websocket connections accepted so far. */
  connections(): number;
  /** The websocket side's counts and any breach of Binance's limits. */
  wsStats(): WsStats;
  close(): Promise<void>;
}

const round = (x: number) => Number(x.toPrecision(10));

/** Re-times `candles` so that index `history` starts at `formingOpen`. */
function retime(candles: readonly Candle[], history: number, formingOpen: number, intervalMs: number): Candle[] {
  const first = formingOpen - history * intervalMs;
  return candles.map((c, i) => ({ ...c, openTime: first + i * intervalMs }));
}

/** The forming candle revealed up to fraction `f` of its real move (f = 1: the real candle). */
function partial(c: Candle, f: number): Candle {
  if (f >= 1) return { ...c };
  const close = round(c.open + (c.close - c.open) * f);
  return {
    openTime: c.openTime,
    open: c.open,
    high: Math.max(c.open, close),
    low: Math.min(c.open, close),
    close,
    volume: round(c.volume * f),
  };
}

function klineRow(c: Candle, intervalMs: number): unknown[] {
  return [
    c.openTime,
    String(c.open),
    String(c.high),
    String(c.low),
    String(c.close),
    String(c.volume),
    c.openTime + intervalMs - 1,
    "0",
    1,
    "0",
    "0",
    "0",
  ];
}

function spotSymbolInfo(id: string, base: string) {
  return {
    symbol: id,
    status: "TRADING",
    baseAsset: base,
    baseAssetPrecision: 8,
    quoteAsset: "USDT",
    quotePrecision: 8,
    quoteAssetPrecision: 8,
    orderTypes: ["LIMIT", "MARKET"],
    isSpotTradingAllowed: true,
    isMarginTradingAllowed: false,
    permissions: [],
    permissionSets: [["SPOT"]],
    filters: [
      { filterType: "PRICE_FILTER", minPrice: "0.00000001", maxPrice: "1000000.00000000", tickSize: "0.00000001" },
      { filterType: "LOT_SIZE", minQty: "0.00000001", maxQty: "9000000.00000000", stepSize: "0.00000001" },
    ],
  };
}

function futuresSymbolInfo(id: string, base: string) {
  return {
    symbol: id,
    pair: id,
    contractType: "PERPETUAL",
    deliveryDate: 4133404800000,
    onboardDate: 1569398400000,
    status: "TRADING",
    baseAsset: base,
    quoteAsset: "USDT",
    marginAsset: "USDT",
    pricePrecision: 2,
    quantityPrecision: 3,
    baseAssetPrecision: 8,
    quotePrecision: 8,
    underlyingType: "COIN",
    filters: [
      { filterType: "PRICE_FILTER", minPrice: "0.01", maxPrice: "1000000", tickSize: "0.01" },
      { filterType: "LOT_SIZE", minQty: "0.001", maxQty: "1000", stepSize: "0.001" },
    ],
    orderTypes: ["LIMIT", "MARKET"],
    timeInForce: ["GTC"],
  };
}

/** Starts the fake exchange on loopback (or on `options.host`). */
export async function startFakeExchange(options: FakeExchangeOptions): Promise<FakeExchange> {
  const { intervalMs, interval } = options;
  const formingOpen = options.startOpenTime ?? Math.floor(Date.now() / intervalMs) * intervalMs;
  const coins = new Map<string, CoinState>();
  for (const coin of options.coins) {
    const id = `${coin.base}USDT`;
    coins.set(id, {
      base: coin.base,
      id,
      series: retime(coin.candles, options.history, formingOpen, intervalMs),
      cursor: options.history,
      revealed: 0.25,
      silent: false,
      withholdCloses: false,
    });
  }
  const byBase = (base: string) => {
    const c = coins.get(`${base}USDT`);
    if (!c) throw new Error(`fake exchange has no ${base}`);
    return c;
  };
  const faults: RestFault[] = [];
  const restCalls = new Map<string, number>();
  const subscribers = new Map<string, Set<WebSocket>>();
  let connections = 0;
  let maxOpen = 0;
  let maxStreamsOnOneConnection = 0;
  let maxIncomingInOneSecond = 0;
  let controlMessages = 0;
  let maxStreamsInOneMessage = 0;
  const breaches: string[] = [];
  const now = () => {
    const first = coins.values().next().value as CoinState;
    return first.series[first.cursor]!.openTime + 1_000;
  };

  function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  }

  function served(c: CoinState): Candle[] {
    return [...c.series.slice(0, c.cursor), partial(c.series[c.cursor]!, c.revealed)];
  }

  function klines(url: URL, res: ServerResponse): void {
    const coin = coins.get(url.searchParams.get("symbol") ?? "");
    if (!coin) {
      sendJson(res, 400, { code: -1121, msg: "Invalid symbol." });
      return;
    }
    if (url.searchParams.get("interval") !== interval) {
      sendJson(res, 200, []);
      return;
    }
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 500), 1000);
    const start = url.searchParams.get("startTime");
    const end = url.searchParams.get("endTime");
    let rows = served(coin);
    if (end !== null) rows = rows.filter((c) => c.openTime <= Number(end));
    if (start !== null) rows = rows.filter((c) => c.openTime >= Number(start)).slice(0, limit);
    else rows = rows.slice(-limit);
    sendJson(
      res,
      200,
      rows.map((c) => klineRow(c, intervalMs)),
    );
  }

  function futures(url: URL, res: ServerResponse): boolean {
    if (!options.futures) return false;
    const symbols = [...coins.values()];
    const one = coins.get(url.searchParams.get("symbol") ?? "");
    const price = (c: CoinState) => served(c).at(-1)!.close;
    switch (url.pathname) {
      case "/fapi/v1/exchangeInfo":
        sendJson(res, 200, {
          timezone: "UTC",
          serverTime: now(),
          rateLimits: [],
          exchangeFilters: [],
          assets: [],
          symbols: symbols.map((c) => futuresSymbolInfo(c.id, c.base)),
        });
        return true;
      case "/fapi/v1/premiumIndex": {
        const row = (c: CoinState) => ({
          symbol: c.id,
          markPrice: String(price(c)),
          indexPrice: String(price(c)),
          estimatedSettlePrice: String(price(c)),
          lastFundingRate: "0.00010000",
          interestRate: "0.00010000",
          nextFundingTime: now() + 3_600_000,
          time: now(),
        });
        sendJson(res, 200, one ? row(one) : symbols.map(row));
        return true;
      }
      case "/fapi/v1/openInterest":
        if (!one) sendJson(res, 400, { code: -1121, msg: "Invalid symbol." });
        else sendJson(res, 200, { symbol: one.id, openInterest: "1000.5", time: now() });
        return true;
      case "/futures/data/globalLongShortAccountRatio":
        if (!one) sendJson(res, 400, { code: -1121, msg: "Invalid symbol." });
        else
          sendJson(res, 200, [
            {
              symbol: one.id,
              longShortRatio: "1.2500",
              longAccount: "0.5556",
              shortAccount: "0.4444",
              timestamp: now() - 300_000,
            },
          ]);
        return true;
      case "/futures/data/openInterestHist":
        if (!one) sendJson(res, 400, { code: -1121, msg: "Invalid symbol." });
        else
          sendJson(res, 200, [
            {
              symbol: one.id,
              sumOpenInterest: "1000.5",
              sumOpenInterestValue: String(1000.5 * price(one)),
              timestamp: now() - 300_000,
            },
          ]);
        return true;
      default:
        return false;
    }
  }

  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    restCalls.set(url.pathname, (restCalls.get(url.pathname) ?? 0) + 1);
    const fault = faults.shift();
    if (fault && fault.body === undefined && fault.status >= 500) {
      // Binance's gateway answers 5xx with a plain page, not its JSON error shape.
      res.writeHead(fault.status, { "content-type": "text/html", ...fault.headers });
      return res.end(`<html><body>${fault.status} Service Unavailable</body></html>`);
    }
    if (fault)
      return sendJson(
        res,
        fault.status,
        fault.body ?? {
          code: -1003,
          msg: "Too many requests; current limit of IP is 6000 request weight per 1 MINUTE.",
        },
        fault.headers,
      );
    switch (url.pathname) {
      case "/api/v3/time":
        return sendJson(res, 200, { serverTime: now() });
      case "/api/v3/exchangeInfo":
        return sendJson(res, 200, {
          timezone: "UTC",
          serverTime: now(),
          rateLimits: [],
          exchangeFilters: [],
          symbols: [...coins.values()].map((c) => spotSymbolInfo(c.id, c.base)),
        });
      case "/api/v3/klines":
        return klines(url, res);
      default:
        if (!futures(url, res)) sendJson(res, 404, { code: -1, msg: `no route ${url.pathname}` });
    }
  });
  const wss = new WebSocketServer({ server: http });
  wss.on("connection", (socket) => {
    connections++;
    maxOpen = Math.max(maxOpen, wss.clients.size);
    const streams = new Set<string>();
    const incoming: number[] = [];
    const breach = (what: string) => {
      breaches.push(what);
      socket.terminate();
    };
    // Binance counts every incoming frame (messages, pings, pongs) against 5 a second.
    const count = () => {
      const at = Date.now();
      incoming.push(at);
      while (incoming[0]! <= at - 1_000) incoming.shift();
      maxIncomingInOneSecond = Math.max(maxIncomingInOneSecond, incoming.length);
      if (incoming.length > WS_MAX_INCOMING_PER_SECOND) breach(`${incoming.length} incoming frames within one second`);
    };
    socket.on("ping", count);
    socket.on("pong", count);
    socket.on("message", (data) => {
      count();
      let msg: { method?: string; params?: string[]; id?: unknown };
      try {
        msg = JSON.parse(String(data)) as typeof msg;
      } catch {
        return;
      }
      if (msg.method === "SUBSCRIBE" && Array.isArray(msg.params)) {
        controlMessages++;
        maxStreamsInOneMessage = Math.max(maxStreamsInOneMessage, msg.params.length);
        for (const stream of msg.params) {
          streams.add(stream);
          const set = subscribers.get(stream) ?? new Set<WebSocket>();
          set.add(socket);
          subscribers.set(stream, set);
        }
        maxStreamsOnOneConnection = Math.max(maxStreamsOnOneConnection, streams.size);
        if (streams.size > WS_MAX_STREAMS_PER_CONNECTION) return breach(`${streams.size} streams on one connection`);
        socket.send(JSON.stringify({ result: null, id: msg.id }));
      } else if (msg.method === "UNSUBSCRIBE" && Array.isArray(msg.params)) {
        controlMessages++;
        for (const stream of msg.params) {
          streams.delete(stream);
          subscribers.get(stream)?.delete(socket);
        }
        socket.send(JSON.stringify({ result: null, id: msg.id }));
      }
    });
    socket.on("close", () => {
      for (const set of subscribers.values()) set.delete(socket);
    });
  });

  function stream(c: CoinState, candle: Candle, final: boolean): void {
    if (c.silent) return;
    const name = `${c.id.toLowerCase()}@kline_${interval}`;
    const message = JSON.stringify({
      e: "kline",
      E: Date.now(),
      s: c.id,
      k: {
        t: candle.openTime,
        T: candle.openTime + intervalMs - 1,
        s: c.id,
        i: interval,
        f: 1,
        L: 2,
        o: String(candle.open),
        c: String(candle.close),
        h: String(candle.high),
        l: String(candle.low),
        v: String(candle.volume),
        n: 2,
        x: final,
        q: "0",
        V: "0",
        Q: "0",
        B: "0",
      },
    });
    for (const socket of subscribers.get(name) ?? []) if (socket.readyState === socket.OPEN) socket.send(message);
  }

  const selected = (bases?: readonly string[]) => (bases ? bases.map(byBase) : [...coins.values()]);

  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => http.listen(0, host, resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    restUrl: `http://${host}:${port}`,
    wsUrl: `ws://${host}:${port}`,
    restCalls,
    now,
    closed: (base) => {
      const c = byBase(base);
      return c.series.slice(0, c.cursor).map((x) => ({ ...x }));
    },
    forming: (base) => {
      const c = byBase(base);
      return partial(c.series[c.cursor]!, c.revealed);
    },
    tick(bases) {
      for (const c of selected(bases)) {
        c.revealed = Math.min(0.95, c.revealed + 0.25);
        stream(c, partial(c.series[c.cursor]!, c.revealed), false);
      }
    },
    closeCandles(bases) {
      for (const c of selected(bases)) {
        if (c.cursor + 1 >= c.series.length) throw new Error(`fake exchange ran out of candles for ${c.base}`);
        if (!c.withholdCloses) stream(c, { ...c.series[c.cursor]! }, true);
        c.cursor++;
        c.revealed = 0.25;
        stream(c, partial(c.series[c.cursor]!, c.revealed), false);
      }
    },
    revise(base, openTime, change) {
      const c = byBase(base);
      const i = c.series.findIndex((x) => x.openTime === openTime);
      if (i < 0 || i >= c.cursor) throw new Error("only a closed candle can be revised");
      c.series[i] = { ...c.series[i]!, ...change };
    },
    withholdCloses(base, withhold) {
      byBase(base).withholdCloses = withhold;
    },
    silence(base, silent) {
      byBase(base).silent = silent;
    },
    dropSockets() {
      for (const socket of wss.clients) socket.terminate();
    },
    failRest(...more) {
      faults.push(...more);
    },
    connections: () => connections,
    wsStats: () => ({
      connections,
      open: wss.clients.size,
      maxOpen,
      maxStreamsOnOneConnection,
      maxIncomingInOneSecond,
      controlMessages,
      maxStreamsInOneMessage,
      breaches: [...breaches],
    }),
    async close() {
      for (const socket of wss.clients) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
