/**
 * Candle ingest end to end: a real server whose MarketFeed is both the snapshot and the
 * IngestService backend, a real connect-node gRPC client (HTTP/2) streaming PushCandles to the
 * internal port with `authorization: Bearer <INTERNAL_TOKEN>`, and the paid REST endpoint
 * reading the result. Real BTC/ETH candles give the engine's 4h values; a forming candle that
 * breaks structure is confirmed:false until the same candle closes; counts and reasons come back
 * over gRPC; no token, a wrong token or the public port apply nothing. Finally the
 * `signals candles import` CLI on a header CSV and a headerless Binance kline file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { create } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import { openDb } from "../../src/db/client.ts";
import { type Candle, readClosed, readForming, runSeries } from "../../src/engine/index.ts";
import { readCandleFile } from "../../src/market/csv-candles.ts";
import { MarketFeed } from "../../src/market/feed.ts";
import { readCandles } from "../../src/market/store.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { apiJson } from "../support/api-request.ts";
import { childEnv, runCli } from "../support/processes.ts";
import { aggregateCandles, parseCandleCsv } from "../support/real-candles.ts";
import { referenceEntry } from "../support/reference-signal-id.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

const H = 3_600_000;
const CANDLE_DIR = fileURLToPath(new URL("../../../shared/data/candles/", import.meta.url));
const BTC_FILE = `${CANDLE_DIR}BTCUSDT_1h.csv.gz`;
const ETH_FILE = `${CANDLE_DIR}ETHUSDT_1h.csv.gz`;

let server: TestServer;
let apiKey: string;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  server = await startTestServer({ feed: true });
  ({ apiKey } = await server.account());
});
afterAll(async () => {
  for (const s of sessions) s.abort();
  await server?.close();
});

/** A gRPC (HTTP/2) IngestService client for `baseUrl`, sending `authorization` when given. */
function ingestClient(authorization: string | null, baseUrl = server.internalUrl): Client<typeof IngestService> {
  const auth: Interceptor = (next) => (req) => {
    if (authorization !== null) req.header.set("authorization", authorization);
    return next(req);
  };
  const sessionManager = new Http2SessionManager(baseUrl);
  sessions.push(sessionManager);
  return createClient(IngestService, createGrpcTransport({ baseUrl, sessionManager, interceptors: [auth] }));
}

const authorized = () => ingestClient(`Bearer ${INTERNAL_TOKEN}`);

function request(u: CandleUpdate): PushCandlesRequest {
  return create(PushCandlesRequestSchema, { ...u, openTime: BigInt(u.openTime) });
}

async function* requests(
  updates: Iterable<CandleUpdate> | AsyncIterable<CandleUpdate>,
): AsyncGenerator<PushCandlesRequest> {
  for await (const u of updates) yield request(u);
}

async function* take<T>(source: AsyncIterable<T>, n: number): AsyncGenerator<T> {
  let i = 0;
  for await (const item of source) {
    yield item;
    if (++i >= n) return;
  }
}

const update = (symbol: string, c: Candle, closed = true): CandleUpdate => ({ symbol, tf: "1h", closed, ...c });

/** The response as plain numbers. */
function counts(res: {
  accepted: bigint;
  rejected: bigint;
  duplicates: bigint;
  rejections: Array<{ index: bigint; symbol: string; reason: string }>;
}) {
  return {
    accepted: Number(res.accepted),
    rejected: Number(res.rejected),
    duplicates: Number(res.duplicates),
    rejections: res.rejections.map((r) => ({ index: Number(r.index), symbol: r.symbol, reason: r.reason })),
  };
}

async function getSignals(symbols: string, tf: string): Promise<Array<Record<string, unknown>>> {
  return (await apiJson(server.baseUrl, `/api/v1/signals?symbols=${symbols}&tf=${tf}`, apiKey)).signals;
}

const entry = referenceEntry;

// ------------------------------------------------------------------------------------------

describe.runIf(existsSync(BTC_FILE) && existsSync(ETH_FILE))("real candles pushed over gRPC", () => {
  it("GET /api/v1/signals?symbols=BTC,ETH&tf=4h returns the engine's values on the same candles", async () => {
    const slices = { BTC: 4_001, ETH: 3_003 } as const;
    const client = authorized();
    for (const [symbol, n] of Object.entries(slices)) {
      const file = symbol === "BTC" ? BTC_FILE : ETH_FILE;
      const res = await client.pushCandles(requests(take(readCandleFile(file, symbol, "1h"), n)));
      expect(counts(res)).toEqual({ accepted: n, rejected: 0, duplicates: 0, rejections: [] });
    }
    const expected = (file: string, n: number, symbol: string) => {
      const hourly = parseCandleCsv(gunzipSync(readFileSync(file)).toString("utf8")).slice(0, n);
      const buckets = aggregateCandles(hourly, 4 * H);
      const last = buckets[buckets.length - 1]!;
      const complete = hourly[hourly.length - 1]!.openTime === last.openTime + 3 * H;
      const state = runSeries(complete ? buckets : buckets.slice(0, -1));
      const reading = complete ? readClosed(state) : readForming(state, last);
      return entry(symbol, "4h", state, reading!);
    };
    const btc = expected(BTC_FILE, slices.BTC, "BTC");
    const eth = expected(ETH_FILE, slices.ETH, "ETH");
    expect(await getSignals("BTC,ETH,DOGE", "4h")).toEqual([
      btc,
      eth,
      { symbol: "DOGE", tf: "4h", ok: false, reason: "unknown_symbol" },
    ]);
    // 15m cannot be built from 1h candles.
    expect(await getSignals("BTC", "15m")).toEqual([{ symbol: "BTC", tf: "15m", ok: false, reason: "no_data" }]);
  });
});

describe("a structure break pushed over gRPC", () => {
  // 60 hourly candles from 2026-11-12 00:00 UTC: a falling zigzag (5 down by 3, 4 up by 2),
  // so the structure trend is down and the last swing high is unbroken.
  const start = Date.UTC(2026, 10, 12);
  const { history: candles, breaker } = structureBreak(start);
  const closed = runSeries(candles);

  it("is a real break per the engine (the premise of the next tests)", () => {
    expect(closed).toMatchObject({ trend: -1, swingHighBroken: false });
    expect(closed.swingHigh).not.toBeNull();
    expect(readClosed(closed)!.signal).toMatch(/SHORT/);
    expect(readForming(closed, breaker)).toMatchObject({ signal: "LONG", confirmed: false });
  });

  it("closed history pushed over gRPC shows the engine's confirmed reading", async () => {
    const res = await authorized().pushCandles(requests(candles.map((c) => update("ZZB", c))));
    expect(counts(res)).toEqual({ accepted: 60, rejected: 0, duplicates: 0, rejections: [] });
    const [e] = await getSignals("ZZB", "1h");
    expect(e).toEqual(entry("ZZB", "1h", closed, readClosed(closed)!));
    expect(e).toMatchObject({ confirmed: true, price: candles[candles.length - 1]!.close });
  });

  it(
    "a forming candle whose close breaks the swing high shows " +
      "confirmed:false with the new signal at the forming close",
    async () => {
      const res = await authorized().pushCandles(requests([update("ZZB", breaker, false)]));
      expect(counts(res)).toEqual({ accepted: 1, rejected: 0, duplicates: 0, rejections: [] });
      const [e] = await getSignals("ZZB", "1h");
      expect(e).toMatchObject({ ok: true, signal: "LONG", confirmed: false, price: breaker.close });
      expect(e).toEqual(entry("ZZB", "1h", closed, readForming(closed, breaker)));
    },
  );

  it("the same candle once closed shows confirmed:true and the same signal", async () => {
    const forming = (await getSignals("ZZB", "1h"))[0]!;
    const res = await authorized().pushCandles(requests([update("ZZB", breaker, true)]));
    expect(counts(res)).toEqual({ accepted: 1, rejected: 0, duplicates: 0, rejections: [] });
    const [e] = await getSignals("ZZB", "1h");
    expect(e).toMatchObject({
      ok: true,
      signal: "LONG",
      confirmed: true,
      price: breaker.close,
      defense: forming.defense,
    });
    const afterBreak = runSeries([...candles, breaker]);
    expect(e).toEqual(entry("ZZB", "1h", afterBreak, readClosed(afterBreak)!));
    expect(e!.signal_id).toBe(`ZZB-1h-${breaker.openTime}`);
    // A new feed over the same store (a restart) answers the same.
    // (Without LISTEN: it must show what load() rebuilt, not follow the server's later commits.)
    const quiet = { ...server.db.handle, listen: async () => {} };
    const restarted = new MarketFeed({
      db: quiet,
      clock: server.clock,
      logger: pino({ level: "silent" }),
      staleAfterMs: server.config.staleAfterMs,
      alertMaxDelayMs: server.config.alerts.maxDelayMs,
    });
    await restarted.load();
    for (const tf of ["1h", "4h", "1d"] as const)
      expect(restarted.lookup("ZZB", tf, server.clock()), tf).toEqual(server.feed!.lookup("ZZB", tf, server.clock()));
  });

  it("a stream with bad rows gets its counts and reasons back over gRPC", async () => {
    const next: Candle = {
      ...breaker,
      openTime: breaker.openTime + H,
      open: breaker.close,
      low: breaker.close - 1,
      high: breaker.close + 1,
    };
    const res = await authorized().pushCandles(
      requests([
        update("ZZB", candles[10]!), // history: duplicate
        update("ZZB", { ...next, high: next.low - 1 }), // high_below_low
        update("ZZB", { ...next, close: Number.NaN }), // non_finite_value
        { ...update("ZZB", next), tf: "2h" }, // unknown_timeframe
        { ...update("ZZB", next), tf: "4h", openTime: Date.UTC(2026, 10, 14, 16) }, // not_base_timeframe
        update("zzb", next), // accepted (upper-cased)
        update("ZZB", candles[59]!), // earlier than the previous row: out_of_order
        update("ZZB", { ...next, openTime: next.openTime + 30 * 60_000 }), // misaligned_open_time
        update("BAD!", next), // invalid_symbol
      ]),
    );
    expect(counts(res)).toEqual({
      accepted: 1,
      rejected: 7,
      duplicates: 1,
      rejections: [
        { index: 1, symbol: "ZZB", reason: "high_below_low" },
        { index: 2, symbol: "ZZB", reason: "non_finite_value" },
        { index: 3, symbol: "ZZB", reason: "unknown_timeframe" },
        { index: 4, symbol: "ZZB", reason: "not_base_timeframe" },
        { index: 6, symbol: "ZZB", reason: "out_of_order" },
        { index: 7, symbol: "ZZB", reason: "misaligned_open_time" },
        { index: 8, symbol: "BAD!", reason: "invalid_symbol" },
      ],
    });
    const [e] = await getSignals("ZZB", "1h");
    const afterNext = runSeries([...candles, breaker, next]);
    expect(e).toEqual(entry("ZZB", "1h", afterNext, readClosed(afterNext)!));
  });
});

describe("IngestService authorization", () => {
  const c: Candle = { openTime: Date.UTC(2026, 10, 14), open: 10, high: 11, low: 9, close: 10.5, volume: 1 };

  for (const [label, authorization] of [
    ["without a token", null],
    ["with a wrong token", "Bearer wrong-token-0123456789abcdef"],
    ["with the token but no Bearer scheme", INTERNAL_TOKEN],
    ["with the token under another scheme", `Basic ${INTERNAL_TOKEN}`],
    ["with the token plus a suffix", `Bearer ${INTERNAL_TOKEN}x`],
  ] as const) {
    it(`PushCandles ${label} fails UNAUTHENTICATED and applies nothing`, async () => {
      const err = await ingestClient(authorization)
        .pushCandles(requests([update("ZZA", c)]))
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
      expect(server.feed!.symbols()).not.toContain("ZZA");
      expect(await getSignals("ZZA", "1h")).toEqual([{ symbol: "ZZA", tf: "1h", ok: false, reason: "unknown_symbol" }]);
    });
  }

  it("the public port does not serve IngestService, even with the token", async () => {
    const err = await ingestClient(`Bearer ${INTERNAL_TOKEN}`, server.baseUrl)
      .pushCandles(requests([update("ZZA", c)]))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ConnectError);
    expect(server.feed!.symbols()).not.toContain("ZZA");
  });

  it("with the token, the same push is accepted", async () => {
    expect(counts(await authorized().pushCandles(requests([update("ZZA", c)])))).toMatchObject({
      accepted: 1,
      rejected: 0,
    });
    expect(server.feed!.symbols()).toContain("ZZA");
  });
});

describe(`signals candles import (${usingPostgres ? "Postgres" : "embedded PGlite"})`, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let databaseUrl: string | null = null;
  let dropDatabase: (() => Promise<void>) | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "signals-import-test-"));
    if (usingPostgres) {
      const database = await createPostgresDatabase();
      databaseUrl = database.url;
      dropDatabase = database.drop;
      env = childEnv({ DATABASE_URL: database.url });
    } else {
      env = childEnv({ DATA_DIR: path.join(dir, "data") });
    }
  });
  afterAll(async () => {
    await dropDatabase?.();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("imports a header CSV and a headerless Binance kline file and prints the counts as JSON", async () => {
    const start = Date.UTC(2024, 0, 1);
    const rows: Candle[] = Array.from({ length: 30 }, (_, i) => {
      const open = 100 + i;
      const close = open + (i % 3 === 0 ? -0.5 : 0.75);
      return {
        openTime: start + i * H,
        open,
        high: Math.max(open, close) + 0.25,
        low: Math.min(open, close) - 0.25,
        close,
        volume: 1 + i,
      };
    });
    // File 1: a header (with extra columns), ISO times in two spellings, rows 0..19 and a bad row (high < low) at data
    // row 7.
    const iso = (t: number, i: number) =>
      i % 2 === 0
        ? new Date(t).toISOString()
        : new Date(t + 3 * H).toISOString().replace("T", " ").replace(".000Z", "+03:00");
    const csvLines = ["open_time,open,high,low,close,volume,close_time,returns"];
    rows.slice(0, 20).forEach((c, i) => {
      if (i === 7) csvLines.push(`${iso(c.openTime, i)},${c.open},${c.low - 1},${c.low},${c.close},${c.volume},x,0`);
      else csvLines.push(`${iso(c.openTime, i)},${c.open},${c.high},${c.low},${c.close},${c.volume},x,0`);
    });
    const csvFile = path.join(dir, "zzz.csv");
    writeFileSync(csvFile, `${csvLines.join("\n")}\n`);
    // File 2: Binance klines, no header, epoch ms: the corrected row 7, then rows 15..29 (15..19 are already stored).
    const klineRows = [rows[7]!, ...rows.slice(15)];
    const klineFile = path.join(dir, "zzz-klines.csv");
    writeFileSync(
      klineFile,
      `${klineRows
        .map(
          (c) => `${c.openTime},${c.open},${c.high},${c.low},${c.close},${c.volume},${c.openTime + H - 1},0,10,0,0,0`,
        )
        .join("\n")}\n`,
    );

    const first = await runCli(
      ["candles", "import", "--file", csvFile, "--symbol", "zzz", "--tf", "1h", "--json"],
      env,
    );
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(first.stdout)).toEqual({
      ok: true,
      file: csvFile,
      symbol: "ZZZ",
      tf: "1h",
      accepted: 19,
      rejected: 1,
      duplicates: 0,
      rejections: [{ index: 7, reason: "high_below_low" }],
    });

    const second = await runCli(
      ["candles", "import", "--file", klineFile, "--symbol", "ZZZ", "--tf", "1h", "--json"],
      env,
    );
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" });
    // Row 7 comes before the stored history's end: a duplicate (history is immutable), like 15..19.
    expect(JSON.parse(second.stdout)).toEqual({
      ok: true,
      file: klineFile,
      symbol: "ZZZ",
      tf: "1h",
      accepted: 10,
      rejected: 0,
      duplicates: 6,
      rejections: [],
    });

    // The store holds rows 0..29 except the rejected row 7, exactly.
    const handle = await openDb({ databaseUrl, dataDir: path.join(dir, "data") });
    try {
      expect(await readCandles(handle, "ZZZ", "1h")).toEqual(rows.filter((_, i) => i !== 7));
    } finally {
      await handle.close();
    }
  });
});

describe("a feeder's long-lived stream", () => {
  it("is not cut by REQUEST_TIMEOUT on the internal listener (a stream open for hours is normal there)", async () => {
    const quick = await startTestServer({ feed: true, env: { REQUEST_TIMEOUT: "1" } });
    try {
      const { history } = structureBreak(Date.UTC(2026, 10, 1), 30);
      async function* slowly(): AsyncGenerator<PushCandlesRequest> {
        for (const c of history.slice(0, 6)) {
          yield request(update("SLOW", c));
          await new Promise((r) => setTimeout(r, 500)); // 2.5 s in all, over a 1 s request timeout
        }
      }
      const res = await ingestClient(`Bearer ${INTERNAL_TOKEN}`, quick.internalUrl).pushCandles(slowly());
      expect(counts(res)).toEqual({ accepted: 6, rejected: 0, duplicates: 0, rejections: [] });
    } finally {
      await quick.close();
    }
  });
});
