/**
 * The free endpoints (GET /api/v1/movers, /derivatives, /news, /macro, /fundamentals) against
 * a real server: the REST JSON contract derived from the proto descriptors, the values (movers
 * computed independently from the same candles), filters and cursor pagination, gRPC and
 * Connect parity, the error table and its order, the per-key rate limit (also under concurrency
 * and across two servers on one database), and proof that no free call charges a Token or
 * counts toward the daily cap.
 */

import { create, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ErrorBodySchema } from "../../gen/signals/v1/errors_pb.js";
import {
  GetDerivativesResponseSchema,
  GetFundamentalsResponseSchema,
  GetMacroResponseSchema,
  GetMoversResponseSchema,
  GetNewsResponseSchema,
  MarketDataService,
} from "../../gen/signals/v1/market_data_pb.js";
import { getAccountSummary, regenerateKey, setSubscription } from "../../src/accounts/accounts.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import { httpRouteOf } from "../../src/server/rest.ts";
import { toRestJson } from "../../src/server/rest-json.ts";
import { apiRequest } from "../support/api-request.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import {
  type CoinFixture,
  datasetFixture,
  expectedMover,
  feedCoins,
  H,
  hourly,
  storeDatasets,
} from "../support/market-data-fixtures.ts";
import { expectProtoJson } from "../support/proto-json.ts";
import { structureBreak } from "../support/structure-break.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

interface Endpoint {
  readonly name: string;
  readonly path: string;
  readonly method: DescMethod;
  readonly schema: DescMessage;
}

const m = MarketDataService.method;
const ENDPOINTS: Endpoint[] = [
  { name: "movers", path: "/api/v1/movers", method: m.getMovers, schema: GetMoversResponseSchema },
  { name: "derivatives", path: "/api/v1/derivatives", method: m.getDerivatives, schema: GetDerivativesResponseSchema },
  { name: "news", path: "/api/v1/news", method: m.getNews, schema: GetNewsResponseSchema },
  { name: "macro", path: "/api/v1/macro", method: m.getMacro, schema: GetMacroResponseSchema },
  {
    name: "fundamentals",
    path: "/api/v1/fundamentals",
    method: m.getFundamentals,
    schema: GetFundamentalsResponseSchema,
  },
];

type Json = Record<string, any>;

/** A GET on `server`, checked against the OpenAPI document. */
const checkedGet = (server: TestServer, pathAndQuery: string, key?: string | null) =>
  apiRequest(server.baseUrl, pathAndQuery, { key, contract: true });

const expectError = (r: { status: number; body: Json }, status: number, code: string) => {
  expect({ status: r.status, error: r.body.error }, JSON.stringify(r.body)).toEqual({ status, error: code });
  expect(Object.keys(r.body)).toEqual(ErrorBodySchema.fields.map((f) => f.name));
  expect(r.body.message.length).toBeGreaterThan(0);
};

// ---------------------------------------------------------------------------------------------
// Candles: AAA rises, BBB falls (SHORT on 1h), CCC zigzags with the largest volume, DDD is young (no 24 h),
// EEE went silent 2 h ago (stale: left out). Closed hourly candles up to 03:00 UTC; AAA and CCC
// also have a forming 04:00 candle (the price includes it).
// ---------------------------------------------------------------------------------------------
const NOW = Date.parse("2026-11-15T04:00:00Z");
const LAST_CLOSED = NOW - H;
const COINS: CoinFixture[] = [
  {
    symbol: "AAA",
    closed: hourly(
      40,
      LAST_CLOSED,
      (i) => 100 * 1.01 ** i + (i % 5 === 0 ? -2 : 0),
      (i) => 100 + i,
    ),
    forming: null,
  },
  // A falling zigzag whose engine state is a SHORT signal (test/support/structure-break.ts).
  { symbol: "BBB", closed: structureBreak(LAST_CLOSED - 59 * H).history, forming: null },
  {
    symbol: "CCC",
    closed: hourly(
      40,
      LAST_CLOSED,
      (i) => 20 + 3 * Math.sin(i / 3),
      (i) => 5_000 + 10 * i,
    ),
    forming: null,
  },
  {
    symbol: "DDD",
    closed: hourly(
      20,
      LAST_CLOSED,
      (i) => 1 + i / 100,
      () => 9_000,
    ),
    forming: null,
  },
];
COINS[0]!.forming = {
  openTime: NOW,
  open: COINS[0]!.closed.at(-1)!.close,
  high: 200,
  low: 100,
  close: 150.5,
  volume: 7,
};
COINS[2]!.forming = {
  openTime: NOW,
  open: COINS[2]!.closed.at(-1)!.close,
  high: 30,
  low: 10,
  close: 17.25,
  volume: 1_000,
};
const STALE: CoinFixture = {
  symbol: "EEE",
  closed: hourly(
    40,
    LAST_CLOSED - 2 * H,
    (i) => 10 + i,
    () => 1e9,
  ),
  forming: null,
};

let server: TestServer;
let apiKey: string;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  server = await startTestServer({ feed: true, env: { FREE_RATE_LIMIT: "100000" } });
  await feedCoins(server, [STALE], 2 * H);
  await feedCoins(server, COINS);
  await storeDatasets(server, datasetFixture(NOW));
  ({ apiKey } = await server.account());
});
afterAll(async () => {
  for (const s of sessions) s.abort();
  await server?.close();
});

function grpcClient(target: TestServer): Client<typeof MarketDataService> {
  const sessionManager = new Http2SessionManager(target.baseUrl);
  sessions.push(sessionManager);
  return createClient(MarketDataService, createGrpcTransport({ baseUrl: target.baseUrl, sessionManager }));
}

describe("REST contract, derived from the proto descriptors", () => {
  it(
    "every free endpoint is declared with a GET annotation in proto/ and " +
      "answers 200 with every field under its proto name and JSON type",
    async () => {
      const seen = new Map<string, Set<string>>();
      const queries: Record<string, string[]> = {
        movers: ["", "?tf=1h", "?tf=1h&limit=1"],
        derivatives: ["", "?limit=1"],
        news: ["", "?limit=2"],
        macro: ["", "?limit=1"],
        fundamentals: ["", "?limit=1"],
      };
      for (const e of ENDPOINTS) {
        expect(httpRouteOf(e.method)).toEqual({ verb: "GET", path: e.path });
        for (const q of queries[e.name]!) {
          const r = await checkedGet(server, e.path + q, apiKey);
          expect(r.status, `${e.path}${q}: ${JSON.stringify(r.body)}`).toBe(200);
          expect(r.headers.get("content-type")).toBe("application/json; charset=utf-8");
          expect(r.headers.get("cache-control")).toBe("no-store");
          expectProtoJson(r.body, e.schema, e.schema.name, seen);
          expect(r.body.ok).toBe(true);
          expect(r.body.ts).toBe(NOW);
        }
      }
      // Both branches of every nullable field were exercised (a value and null).
      for (const field of [
        "Mover.change_24h_pct",
        "DerivativesRow.funding_rate",
        "DerivativesRow.open_interest_usd",
        "DerivativesRow.long_short_ratio",
        "GetDerivativesResponse.next_cursor",
        "GetNewsResponse.next_cursor",
        "GetMacroResponse.next_cursor",
        "GetFundamentalsResponse.next_cursor",
        "FundamentalsRow.max_supply",
        "FundamentalsRow.total_supply",
        "FundamentalsRow.fully_diluted_valuation_usd",
        "FundamentalsRow.rank",
        "FundamentalsRow.ath_usd",
        "FundamentalsRow.ath_time",
      ]) {
        expect([...(seen.get(field) ?? [])].sort(), field).toEqual([
          "null",
          field.endsWith("next_cursor") ? "string" : "number",
        ]);
      }
    },
  );

  it("movers: the contract's figures for every fresh coin, computed independently from the same candles", async () => {
    for (const tf of ["1h", "4h"] as const) {
      const r = await checkedGet(server, `/api/v1/movers?tf=${tf}&limit=50`, apiKey);
      const rows = COINS.map((c) => expectedMover(c, tf, NOW)!);
      const by24h = rows.filter((x) => x.change_24h_pct !== null);
      expect(r.body.tf).toBe(tf);
      expect(r.body.gainers).toEqual(
        by24h.filter((x) => x.change_24h_pct! > 0).sort((a, b) => b.change_24h_pct! - a.change_24h_pct!),
      );
      expect(r.body.losers).toEqual(
        by24h.filter((x) => x.change_24h_pct! < 0).sort((a, b) => a.change_24h_pct! - b.change_24h_pct!),
      );
      expect(r.body.volume_leaders).toEqual([...rows].sort((a, b) => b.volume_24h - a.volume_24h));
      // The premises: both lists are populated, DDD has no 24 h change.
      expect(r.body.gainers.length).toBeGreaterThan(0);
      expect(r.body.losers.length).toBeGreaterThan(0);
      expect(r.body.volume_leaders.find((x: Json) => x.symbol === "DDD").change_24h_pct).toBeNull();
      // No row carries a signal (the paid product), although BBB has a current SHORT on 1h.
      if (tf === "1h")
        expect(server.feed!.lookup("BBB", tf, NOW)).toMatchObject({
          ok: true,
          reading: { signal: expect.stringMatching(/SHORT/) },
        });
      for (const row of [...r.body.gainers, ...r.body.losers, ...r.body.volume_leaders])
        expect(Object.keys(row)).not.toContain("signal");
    }
  });

  it(
    "movers: the forming candle sets the price; stale coins and coins " +
      "with no candle of the timeframe are left out; tf falls back to 4h",
    async () => {
      const r = await checkedGet(server, "/api/v1/movers?tf=1h&limit=50", apiKey);
      const all = [...r.body.gainers, ...r.body.losers, ...r.body.volume_leaders];
      expect(all.find((x: Json) => x.symbol === "AAA").price).toBe(150.5);
      expect(all.some((x: Json) => x.symbol === "EEE")).toBe(false);
      const fine = await checkedGet(server, "/api/v1/movers?tf=15m", apiKey);
      expect(fine.body).toMatchObject({ tf: "15m", gainers: [], losers: [], volume_leaders: [] });
      for (const q of ["", "?tf=5m", "?tf=1H", "?tf=1h&tf=1d"])
        expect((await checkedGet(server, `/api/v1/movers${q}`, apiKey)).body.tf).toBe("4h");
      const one = await checkedGet(server, "/api/v1/movers?tf=1h&limit=1", apiKey);
      expect([one.body.gainers.length, one.body.losers.length, one.body.volume_leaders.length]).toEqual([1, 1, 1]);
      expect((await checkedGet(server, "/api/v1/movers?limit=5000", apiKey)).status).toBe(200);
    },
  );

  it(
    "derivatives and fundamentals: per coin (and venue), ordered by symbol, " +
      "with source time and receipt time; stale rows keep their age",
    async () => {
      const d = await checkedGet(server, "/api/v1/derivatives", apiKey);
      expect(d.body.rows.map((x: Json) => `${x.symbol}/${x.venue}`)).toEqual([
        "BTC/binance-futures",
        "BTC/okx",
        "ETH/binance-futures",
        "SOL/bybit",
      ]);
      expect(d.body.rows[1]).toEqual({
        symbol: "BTC",
        venue: "okx",
        funding_rate: -0.00005,
        open_interest_usd: null,
        long_short_ratio: null,
        time: NOW - 120_000,
        updated_at: NOW,
      });
      expect(d.body.rows[3].time).toBe(NOW - 7 * 24 * H);
      expect(d.body.next_cursor).toBeNull();
      const f = await checkedGet(server, "/api/v1/fundamentals?symbols=sol,%20btc,SOL,NOPE", apiKey);
      expect(f.body.rows).toEqual([
        {
          symbol: "BTC",
          circulating_supply: 19.8e6,
          max_supply: 21e6,
          total_supply: 19.8e6,
          market_cap_usd: 1.27e12,
          fully_diluted_valuation_usd: 1.35e12,
          rank: 1,
          ath_usd: 126_080,
          ath_time: Date.parse("2025-10-06T18:57:42.558Z"),
          source: "coingecko",
          time: NOW - H,
          updated_at: NOW,
        },
        {
          symbol: "SOL",
          circulating_supply: 4.6e8,
          max_supply: null,
          total_supply: null,
          market_cap_usd: 6.9e10,
          fully_diluted_valuation_usd: null,
          rank: 5,
          ath_usd: null,
          ath_time: null,
          source: "coingecko",
          time: NOW - 40 * 24 * H,
          updated_at: NOW,
        },
      ]);
    },
  );

  it("news and macro: newest first, with since, symbols / series filters and ties broken by id / series", async () => {
    const n = await checkedGet(server, "/api/v1/news", apiKey);
    expect(n.body.items.map((x: Json) => x.id)).toEqual(["n-4", "n-3", "n-2", "n-1", "n-5"]);
    expect(n.body.items[0]).toEqual({
      id: "n-4",
      time: NOW - 3 * H,
      title: "Second item at the same time",
      source: "Wire C",
      url: "http://example.com/4",
      coins: ["BTC", "ETH"],
      updated_at: NOW,
    });
    expect((await checkedGet(server, "/api/v1/news?symbols=eth", apiKey)).body.items.map((x: Json) => x.id)).toEqual([
      "n-4",
      "n-2",
    ]);
    expect(
      (await checkedGet(server, `/api/v1/news?since=${NOW - 4 * H}`, apiKey)).body.items.map((x: Json) => x.id),
    ).toEqual(["n-4", "n-3", "n-2"]);
    expect(
      (await checkedGet(server, "/api/v1/news?since=2026-11-15T07:00:00%2B08:00&symbols=BTC", apiKey)).body.items.map(
        (x: Json) => x.id,
      ),
    ).toEqual(["n-4", "n-1"]);
    const macro = await checkedGet(server, "/api/v1/macro?series=ISM%20PMI", apiKey);
    expect(macro.body.points.map((x: Json) => [x.series, x.time, x.value])).toEqual(
      [0, 1, 2].map((k) => ["ISM PMI", NOW - (k + 1) * 30 * 24 * H, 49 + k]),
    );
    const all = await checkedGet(server, "/api/v1/macro", apiKey);
    expect(all.body.points.slice(0, 2).map((x: Json) => x.series)).toEqual(["ISM PMI", "US CPI YoY"]);
    expect(all.body.points.map((x: Json) => x.time)).toEqual(
      [...all.body.points.map((x: Json) => x.time)].sort((a, b) => b - a),
    );
  });

  it("cursor pagination walks every row exactly once, in order, for every list endpoint", async () => {
    for (const [path, list] of [
      ["/api/v1/derivatives", "rows"],
      ["/api/v1/news", "items"],
      ["/api/v1/macro", "points"],
      ["/api/v1/fundamentals", "rows"],
    ] as const) {
      const full = (await checkedGet(server, `${path}?limit=100`, apiKey)).body[list];
      for (const size of [1, 2, 4]) {
        const walked: unknown[] = [];
        let cursor: string | null = "";
        while (cursor !== null) {
          const sep: string = path.includes("?") ? "&" : "?";
          const r = await checkedGet(server, `${path}${sep}limit=${size}${cursor ? `&cursor=${cursor}` : ""}`, apiKey);
          expect(r.status).toBe(200);
          expect(r.body[list].length).toBeLessThanOrEqual(size);
          walked.push(...r.body[list]);
          cursor = r.body.next_cursor;
          expect(walked.length).toBeLessThanOrEqual(full.length);
        }
        expect(walked, `${path} by ${size}`).toEqual(full);
      }
    }
    // A cursor combines with filters: the second page of BTC news.
    const first = await checkedGet(server, "/api/v1/news?symbols=BTC&limit=1", apiKey);
    const second = await checkedGet(
      server,
      `/api/v1/news?symbols=BTC&limit=1&cursor=${first.body.next_cursor}`,
      apiKey,
    );
    expect([first.body.items[0].id, second.body.items[0].id, second.body.next_cursor]).toEqual(["n-4", "n-1", null]);
  });

  it("an empty dataset or a filter nothing matches is an empty list, not an error", async () => {
    const empty = await startTestServer();
    try {
      const { apiKey: key } = await empty.account();
      for (const e of ENDPOINTS) {
        const r = await checkedGet(empty, e.path, key);
        expect(r.status).toBe(200);
        expectProtoJson(r.body, e.schema);
      }
      expect((await checkedGet(empty, "/api/v1/news", key)).body).toEqual({
        ok: true,
        ts: empty.clock(),
        items: [],
        next_cursor: null,
      });
      expect((await checkedGet(empty, "/api/v1/movers", key)).body).toEqual({
        ok: true,
        tf: "4h",
        ts: empty.clock(),
        gainers: [],
        losers: [],
        volume_leaders: [],
      });
    } finally {
      await empty.close();
    }
    expect((await checkedGet(server, "/api/v1/fundamentals?symbols=NOPE", apiKey)).body.rows).toEqual([]);
    expect((await checkedGet(server, "/api/v1/macro?series=nothing", apiKey)).body.points).toEqual([]);
  });

  it(
    "400 bad_request with a clear message for unreadable limit, " +
      "since or cursor; a limit above the maximum is clamped",
    async () => {
      const cases: Array<[string, RegExp]> = [
        ["/api/v1/news?limit=0", /limit/],
        ["/api/v1/news?limit=-3", /limit/],
        ["/api/v1/movers?limit=ten", /limit/],
        ["/api/v1/macro?limit=1.5", /limit/],
        ["/api/v1/news?limit=5&limit=6", /limit/],
        ["/api/v1/news?since=yesterday", /since/],
        ["/api/v1/macro?since=2026-11-15", /since/],
        ["/api/v1/news?since=2026-11-15T04:00:00", /since/],
        ["/api/v1/derivatives?cursor=not-a-cursor", /cursor/],
        [`/api/v1/fundamentals?cursor=${Buffer.from('["news",1,"x"]').toString("base64url")}`, /cursor/],
      ];
      for (const [path, message] of cases) {
        const r = await checkedGet(server, path, apiKey);
        expectError(r, 400, "bad_request");
        expect(r.body.message, path).toMatch(message);
        expect(r.headers.get("ratelimit-limit"), path).toBe("100000");
      }
      const clamped = await checkedGet(server, "/api/v1/news?limit=100000", apiKey);
      expect(clamped.status).toBe(200);
      expect(clamped.body.items).toHaveLength(5);
    },
  );

  it("405 for other methods on the free paths", async () => {
    for (const e of ENDPOINTS) {
      const r = await apiRequest(server.baseUrl, e.path, { method: "POST", key: apiKey, contract: true });
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe("GET");
    }
  });
});

describe("gRPC and Connect parity", () => {
  const requests: Record<string, Json[]> = {
    movers: [{}, { tf: "1h", limit: "2" }, { tf: "bogus" }],
    derivatives: [{}, { symbols: "btc", limit: "1" }],
    news: [{}, { symbols: "ETH", since: String(NOW - 4 * H) }, { limit: "2" }],
    macro: [{}, { series: "US CPI YoY", limit: "2" }],
    fundamentals: [{}, { symbols: "ETH,BTC" }],
  };

  it(
    "every method answers the same data over gRPC (HTTP/2), " + "Connect JSON and Connect binary as over REST",
    async () => {
      const grpcC = grpcClient(server);
      const connectJson = createClient(
        MarketDataService,
        createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
      );
      const connectBin = createClient(
        MarketDataService,
        createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
      );
      for (const e of ENDPOINTS) {
        for (const req of requests[e.name]!) {
          const rest = await checkedGet(
            server,
            `${e.path}?${new URLSearchParams(req as Record<string, string>)}`,
            apiKey,
          );
          expect(rest.status).toBe(200);
          for (const [label, client] of [
            ["grpc", grpcC],
            ["connect-json", connectJson],
            ["connect-binary", connectBin],
          ] as const) {
            const headers = new Headers();
            const call = (client as unknown as Record<string, (r: unknown, o: unknown) => Promise<never>>)[
              e.method.localName
            ]!;
            const res = await call(create(e.method.input, req), {
              headers: { "x-api-key": apiKey },
              onHeader: (h: Headers) => {
                for (const [k, v] of h) headers.set(k, v);
              },
            });
            expect(toRestJson(e.schema, res), `${label} ${e.name} ${JSON.stringify(req)}`).toEqual(rest.body);
            expect(headers.get("ratelimit-limit"), label).toBe("100000");
          }
        }
      }
    },
  );

  it("errors carry the machine code as google.rpc.ErrorInfo over gRPC, in the same order", async () => {
    const client = grpcClient(server);
    const refusal = async (key: string | null, req: Json = {}) => {
      try {
        await client.getNews(req, { headers: key === null ? {} : { "x-api-key": key } });
        return null;
      } catch (e) {
        const err = ConnectError.from(e);
        return { code: err.code, reason: err.findDetails(ErrorInfoSchema)[0]?.reason };
      }
    };
    expect(await refusal(null)).toEqual({ code: Code.Unauthenticated, reason: "api_key_required" });
    expect(await refusal("nonsense")).toEqual({ code: Code.Unauthenticated, reason: "invalid_api_key" });
    const expired = await server.account({ subscriptionUntil: new Date(NOW - 1) });
    expect(await refusal(expired.apiKey)).toEqual({ code: Code.PermissionDenied, reason: "subscription_inactive" });
    expect(await refusal(apiKey, { limit: "x" })).toEqual({ code: Code.InvalidArgument, reason: "bad_request" });
  });
});

describe("access: any plan with an active subscription", () => {
  it("401 api_key_required, 401 invalid_api_key (malformed, unknown, regenerated), on every free path", async () => {
    const { accountId, apiKey: old } = await server.account();
    await regenerateKey(server.db.handle, accountId, NOW);
    for (const e of ENDPOINTS) {
      expectError(await checkedGet(server, e.path), 401, "api_key_required");
      expectError(await checkedGet(server, e.path, "nonsense"), 401, "invalid_api_key");
      expectError(await checkedGet(server, e.path, `sig_live_${"Q".repeat(32)}`), 401, "invalid_api_key");
      expectError(await checkedGet(server, e.path, old), 401, "invalid_api_key");
    }
  });

  it(
    "any plan passes (a plan the paid endpoint refuses gets the free data); " +
      "403 subscription_inactive after expiry, renewal restores the key",
    async () => {
      const pro = await server.account({ plan: "pro" });
      expectError(await checkedGet(server, "/api/v1/signals", pro.apiKey), 403, "node_tier_required");
      for (const e of ENDPOINTS) expect((await checkedGet(server, e.path, pro.apiKey)).status, e.path).toBe(200);
      const lapsed = await server.account({ plan: "pro", subscriptionUntil: new Date(NOW) });
      for (const e of ENDPOINTS) {
        const r = await checkedGet(server, e.path, lapsed.apiKey);
        expectError(r, 403, "subscription_inactive");
        expect(r.headers.get("ratelimit-limit")).toBeNull();
      }
      await setSubscription(server.db.handle, lapsed.accountId, new Date(NOW + 24 * H), NOW);
      expect((await checkedGet(server, "/api/v1/news", lapsed.apiKey)).status).toBe(200);
    },
  );

  it(
    "shares the paid endpoint's failed-key throttle: guesses on " +
      "a free path block guesses on the paid one from that address",
    async () => {
      const throttled = await startTestServer({ env: { FAILED_KEY_LIMIT: "3", FAILED_KEY_WINDOW: "60" } });
      try {
        const { apiKey: good } = await throttled.account();
        expect((await checkedGet(throttled, "/api/v1/news", good)).status).toBe(200);
        for (let i = 0; i < 3; i++)
          expectError(
            await checkedGet(throttled, "/api/v1/news", `sig_live_${String(i).repeat(32)}`),
            401,
            "invalid_api_key",
          );
        const blockedPaid = await checkedGet(throttled, "/api/v1/signals", `sig_live_${"Z".repeat(32)}`);
        expectError(blockedPaid, 429, "rate_limited");
        expect(Number(blockedPaid.headers.get("retry-after"))).toBeGreaterThan(0);
        expectError(await checkedGet(throttled, "/api/v1/macro", `sig_live_${"Y".repeat(32)}`), 429, "rate_limited");
        // A key that recently succeeded still passes from the same address.
        expect((await checkedGet(throttled, "/api/v1/macro", good)).status).toBe(200);
      } finally {
        await throttled.close();
      }
    },
  );
});

describe("per-key rate limit (FREE_RATE_LIMIT)", () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ env: { FREE_RATE_LIMIT: "3" } });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it(
    "counts down RateLimit-Remaining across all five endpoints, then " +
      "429 rate_limited with Retry-After until the minute ends",
    async () => {
      const { apiKey: key } = await limited.account();
      limited.clock.set(Date.parse("2026-11-15T04:10:15Z"));
      const seen: string[] = [];
      for (const path of ["/api/v1/movers", "/api/v1/derivatives", "/api/v1/news"]) {
        const r = await checkedGet(limited, path, key);
        expect(r.status).toBe(200);
        const header = (name: string) => r.headers.get(`ratelimit-${name}`);
        seen.push(`${header("limit")}/${header("remaining")}/${header("reset")}`);
      }
      expect(seen).toEqual(["3/2/45", "3/1/45", "3/0/45"]);
      limited.clock.advance(30_000);
      for (const path of ["/api/v1/macro", "/api/v1/fundamentals", "/api/v1/news?limit=0"]) {
        const r = await checkedGet(limited, path, key);
        expectError(r, 429, "rate_limited");
        expect(r.body.message).toMatch(/3 calls per minute/);
        expect([
          r.headers.get("ratelimit-limit"),
          r.headers.get("ratelimit-remaining"),
          r.headers.get("ratelimit-reset"),
          r.headers.get("retry-after"),
        ]).toEqual(["3", "0", "15", "15"]);
      }
      // Another key has its own budget.
      const other = await limited.account();
      expect((await checkedGet(limited, "/api/v1/macro", other.apiKey)).headers.get("ratelimit-remaining")).toBe("2");
      // The next minute starts a new window.
      limited.clock.set(Date.parse("2026-11-15T04:11:00Z"));
      const fresh = await checkedGet(limited, "/api/v1/fundamentals", key);
      expect([fresh.status, fresh.headers.get("ratelimit-remaining"), fresh.headers.get("ratelimit-reset")]).toEqual([
        200,
        "2",
        "60",
      ]);
    },
  );

  it(
    "checks subscription (403) before the rate limit (429), and " +
      "the rate limit before the filters (400); a 400 counts",
    async () => {
      const { accountId, apiKey: key } = await limited.account();
      limited.clock.set(Date.parse("2026-11-15T05:00:00Z"));
      const bad = await checkedGet(limited, "/api/v1/news?limit=0", key);
      expectError(bad, 400, "bad_request");
      expect(bad.headers.get("ratelimit-remaining")).toBe("2");
      await checkedGet(limited, "/api/v1/news", key);
      await checkedGet(limited, "/api/v1/news", key);
      expectError(await checkedGet(limited, "/api/v1/news?limit=0", key), 429, "rate_limited");
      await setSubscription(limited.db.handle, accountId, new Date(limited.clock() - 1), limited.clock());
      expectError(await checkedGet(limited, "/api/v1/news", key), 403, "subscription_inactive");
      expectError(await checkedGet(limited, "/api/v1/news", `sig_live_${"W".repeat(32)}`), 401, "invalid_api_key");
    },
  );

  it(
    "is exact under concurrency and across two servers " + "on one database: 40 simultaneous calls, 3 admitted",
    async () => {
      const second = await startTestServer({ db: limited.db, clock: limited.clock, env: { FREE_RATE_LIMIT: "3" } });
      try {
        const { apiKey: key } = await limited.account();
        limited.clock.set(Date.parse("2026-11-15T06:00:00Z"));
        const statuses = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            checkedGet(i % 2 === 0 ? limited : second, ENDPOINTS[i % ENDPOINTS.length]!.path, key).then(
              (r) => r.status,
            ),
          ),
        );
        expect(statuses.filter((s) => s === 200)).toHaveLength(3);
        expect(statuses.filter((s) => s === 429)).toHaveLength(37);
      } finally {
        await second.close();
      }
    },
  );

  it(
    "over gRPC: RESOURCE_EXHAUSTED with reason rate_limited and " +
      "the RateLimit metadata; metrics count free calls apart",
    async () => {
      const { apiKey: key } = await limited.account();
      limited.clock.set(Date.parse("2026-11-15T07:00:30Z"));
      const client = grpcClient(limited);
      const headers = new Headers();
      await client.getMacro(
        {},
        {
          headers: { "x-api-key": key },
          onHeader: (h) => {
            for (const [k, v] of h) headers.set(k, v);
          },
        },
      );
      expect([headers.get("ratelimit-remaining"), headers.get("ratelimit-reset")]).toEqual(["2", "30"]);
      await client.getMacro({}, { headers: { "x-api-key": key } });
      await client.getMacro({}, { headers: { "x-api-key": key } });
      const err = await client.getMacro({}, { headers: { "x-api-key": key } }).then(
        () => null,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.ResourceExhausted);
      expect(err?.findDetails(ErrorInfoSchema)[0]?.reason).toBe("rate_limited");
      expect([err?.metadata.get("ratelimit-remaining"), err?.metadata.get("retry-after")]).toEqual(["0", "30"]);
      const metrics = await (await fetch(`${limited.internalUrl}/metrics`)).text();
      expect(metrics).toMatch(/signals_free_calls_total\{method="GetMacro",protocol="grpc",outcome="rate_limited"\} 1/);
      expect(metrics).toMatch(/signals_free_calls_total\{method="GetMacro",protocol="grpc",outcome="ok"\} 3/);
      expect(metrics).not.toMatch(/signals_calls_total\{[^}]*\} /);
    },
  );
});

describe("free calls cost nothing", () => {
  it(
    "200 free calls over REST and gRPC leave the Token balance, " + "the ledger and the daily-cap counter unchanged",
    async () => {
      const capped = await startTestServer({ env: { DAILY_CAP: "3", FREE_RATE_LIMIT: "1000" } });
      try {
        const { accountId, apiKey: key } = await capped.account();
        const paid = await checkedGet(capped, "/api/v1/signals", key);
        expect([paid.status, paid.headers.get("ratelimit-remaining")]).toEqual([200, "2"]);
        const before = await ledgerCheck(capped.db.handle, accountId);
        const summaryBefore = await getAccountSummary(capped.db.handle, accountId, capped.clock());
        const client = grpcClient(capped);
        for (let round = 0; round < 20; round++) {
          for (const e of ENDPOINTS) {
            const r = await checkedGet(capped, e.path, key);
            expect(r.status).toBe(200);
            // The free budget is reported, never the daily cap.
            expect(r.headers.get("ratelimit-limit")).toBe("1000");
            await (client as unknown as Record<string, (r: unknown, o: unknown) => Promise<unknown>>)[
              e.method.localName
            ]!({}, { headers: { "x-api-key": key } });
          }
        }
        const after = await ledgerCheck(capped.db.handle, accountId);
        expect(after).toEqual(before);
        expect(ledgerBalances(after)).toBe(true);
        const summaryAfter = await getAccountSummary(capped.db.handle, accountId, capped.clock());
        expect({ credits: summaryAfter.tokensLeft, callsToday: summaryAfter.callsToday }).toEqual({
          credits: summaryBefore.tokensLeft,
          callsToday: 1,
        });
        // The paid endpoint's cap still has exactly the two calls the one paid call left.
        expect((await checkedGet(capped, "/api/v1/signals", key)).headers.get("ratelimit-remaining")).toBe("1");
        expect((await checkedGet(capped, "/api/v1/signals", key)).headers.get("ratelimit-remaining")).toBe("0");
        expectError(await checkedGet(capped, "/api/v1/signals", key), 429, "rate_limited");
        // With the daily cap reached and no Tokens left, the free endpoints still answer.
        await adjustTokens(
          capped.db.handle,
          accountId,
          "adjustment",
          -(summaryAfter.tokensLeft - 2),
          "test: drain",
          capped.config.limits,
        );
        for (const e of ENDPOINTS) expect((await checkedGet(capped, e.path, key)).status).toBe(200);
        expect((await getAccountSummary(capped.db.handle, accountId, capped.clock())).tokensLeft).toBe(0);
      } finally {
        await capped.close();
      }
    },
  );
});
