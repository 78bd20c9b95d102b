/**
 * GET /api/v1/signals over real HTTP/1.1 (fetch) and HTTP/2 cleartext on the same port: the
 * exact JSON contract (derived from the proto descriptors), the error table and its order,
 * billing, the RateLimit headers and hostile input.
 */
import http2 from "node:http2";
import net from "node:net";
import { type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorBodySchema } from "../../gen/signals/v1/errors_pb.js";
import { ArmingSchema, GetSignalsResponseSchema, Signal, SignalEntrySchema } from "../../gen/signals/v1/signals_pb.js";
import { getAccountSummary } from "../../src/accounts/accounts.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import { type ApiAnswer, apiRequest } from "../support/api-request.ts";
import { fixedSnapshot, SAMPLE_READINGS } from "../support/fixed-snapshot.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let server: TestServer;
/** The snapshot's readings: a test may replace one (a new object, as the market publishes). */
const readings = { ...SAMPLE_READINGS };

beforeAll(async () => {
  server = await startTestServer({ snapshot: fixedSnapshot(readings, ["BNB", "XRP"]) });
});
afterAll(async () => {
  await server?.close();
});

/** A paid call, checked against the OpenAPI document. */
const signals = (query: string, key?: string, headers: Record<string, string> = {}) =>
  apiRequest(server.baseUrl, `/api/v1/signals${query}`, { key, headers, contract: true });

/** The JSON type the contract prescribes for a proto field. */
function jsonTypeOf(schema: DescMessage, name: string): string {
  const field = schema.fields.find((f) => f.name === name)!;
  if (field.fieldKind === "list") return "array";
  if (field.fieldKind === "message") return "object-or-null";
  if (field.fieldKind === "enum") return "string";
  if (field.scalar === ScalarType.STRING) return "string";
  if (field.scalar === ScalarType.BOOL) return "boolean";
  return field.proto.proto3Optional ? "number-or-null" : "number";
}

function expectMatchesSchema(value: Record<string, unknown>, schema: DescMessage, names: string[]) {
  expect(Object.keys(value)).toEqual(names);
  for (const name of names) {
    const expected = jsonTypeOf(schema, name);
    const actual = value[name] === null ? "null" : Array.isArray(value[name]) ? "array" : typeof value[name];
    expect(expected.split("-or-"), `${schema.typeName}.${name}`).toContain(actual);
  }
}

describe("200 body", () => {
  it("has every proto field under its proto name with the contract's JSON type, in order", async () => {
    const { accountId, apiKey } = await server.account();
    const r = await signals("?symbols=BTC,ETH,NEWCOIN&tf=1h", apiKey);
    expect(r.status).toBe(200);
    expectMatchesSchema(
      r.body,
      GetSignalsResponseSchema,
      GetSignalsResponseSchema.fields.map((f) => f.name),
    );
    expect(r.body).toMatchObject({
      ok: true,
      tf: "1h",
      tier: "node",
      billing: "1 energy credit per call (node / founding seats only)",
      credits_left: 9_999,
    });
    expect(r.body.ts).toBe(server.clock());
    expect(Number.isInteger(r.body.ts)).toBe(true);
    const [btc, eth, unknown] = r.body.signals;
    // `demo` is written only for the demo feed's readings: a real reading is exactly the contract's.
    const readingFields = SignalEntrySchema.fields.map((f) => f.name).filter((n) => n !== "reason" && n !== "demo");
    expectMatchesSchema(btc, SignalEntrySchema, readingFields);
    expect(btc).toEqual({
      symbol: "BTC",
      tf: "1h",
      ok: true,
      price: 64210.5,
      signal: "LONG",
      confirmed: true,
      defense: 63120,
      arming: { dir: -1, score: 6, trigger: 63500, invalidation: 64890 },
      atr_pct: 0.84,
      signal_id: "BTC-1h-1795302000000",
    });
    expectMatchesSchema(
      btc.arming,
      ArmingSchema,
      ArmingSchema.fields.map((f) => f.name),
    );
    expect(eth).toMatchObject({ signal: "NONE", defense: null, arming: null, signal_id: null });
    expect(unknown).toEqual({ symbol: "NEWCOIN", tf: "1h", ok: false, reason: "unknown_symbol" });
    expect((await getAccountSummary(server.db.handle, accountId, server.clock())).tokensLeft).toBe(9_999);
  });

  it("answers a replaced reading with its new values, the same reading with the same bytes", async () => {
    // An entry is built once per reading object and its REST text written once; a new reading
    // must never be answered with the old one's.
    const { apiKey } = await server.account();
    const before = readings["BTC/1h"]!;
    const first = await signals("?symbols=BTC,ETH&tf=1h", apiKey);
    const again = await signals("?symbols=BTC,ETH&tf=1h", apiKey);
    expect(JSON.stringify(again.body.signals)).toBe(JSON.stringify(first.body.signals));
    try {
      readings["BTC/1h"] = { ...before, price: 64300.25, signal: "STRONG_LONG", arming: null, signalId: null };
      const replaced = await signals("?symbols=BTC,ETH&tf=1h", apiKey);
      expect(replaced.body.signals[0]).toMatchObject({ price: 64300.25, signal: "STRONG_LONG", arming: null });
      expect(replaced.body.signals[1]).toEqual(first.body.signals[1]);
    } finally {
      readings["BTC/1h"] = before;
    }
    const back = await signals("?symbols=BTC&tf=1h", apiKey);
    expect(back.body.signals[0]).toEqual(first.body.signals[0]);
  });

  it("sends each signal as its enum name without prefix", async () => {
    const { apiKey } = await server.account();
    const r = await signals("?symbols=SOL&tf=1h", apiKey);
    const names = Object.keys(Signal).filter((k) => Number.isNaN(Number(k)) && k !== "UNSPECIFIED");
    expect(names).toContain(r.body.signals[0].signal);
    expect(r.body.signals[0].signal).toBe("STRONG_SHORT");
  });

  it("returns entries in request order, one per accepted symbol, 8 at most, for 1 Token", async () => {
    const { accountId, apiKey } = await server.account();
    const r = await signals("?symbols=xrp,%20btc,eth,,BTC,a1,a2,a3,a4,a5,a6,a7&tf=1h", apiKey);
    expect(r.body.signals.map((e: { symbol: string }) => e.symbol)).toEqual([
      "XRP",
      "BTC",
      "ETH",
      "A1",
      "A2",
      "A3",
      "A4",
      "A5",
    ]);
    expect(r.body.credits_left).toBe(9_999);
    const check = await ledgerCheck(server.db.handle, accountId);
    expect(check.charges).toBe(1);
    expect(ledgerBalances(check)).toBe(true);
  });

  it("maps pair names and malformed codes to ok:false entries, never to NONE", async () => {
    const { apiKey } = await server.account();
    const r = await signals("?symbols=BTCUSDT,B-D,BNB&tf=1h", apiKey);
    expect(r.body.signals).toEqual([
      { symbol: "BTCUSDT", tf: "1h", ok: false, reason: "unknown_symbol" },
      { symbol: "B-D", tf: "1h", ok: false, reason: "invalid_symbol" },
      { symbol: "BNB", tf: "1h", ok: false, reason: "no_data" },
    ]);
  });

  it("uses the default symbols and falls back to 4h for a missing or bad tf", async () => {
    const { apiKey } = await server.account();
    for (const query of ["", "?tf=", "?tf=5m", "?tf=4H", "?tf=1h&tf=1d"]) {
      const r = await signals(query, apiKey);
      expect(r.status).toBe(200);
      expect(r.body.tf).toBe("4h");
      if (query === "")
        expect(r.body.signals.map((e: { symbol: string }) => e.symbol)).toEqual(["BTC", "ETH", "SOL", "BNB", "XRP"]);
      expect(r.body.signals.every((e: { tf: string }) => e.tf === "4h")).toBe(true);
    }
  });

  it("joins repeated symbols parameters", async () => {
    const { apiKey } = await server.account();
    const r = await signals("?symbols=BTC&symbols=ETH&tf=1h", apiKey);
    expect(r.body.signals.map((e: { symbol: string }) => e.symbol)).toEqual(["BTC", "ETH"]);
  });

  it("carries the IETF RateLimit headers for the daily cap", async () => {
    const { apiKey } = await server.account();
    const r = await signals("?symbols=BTC", apiKey);
    expect(r.headers.get("ratelimit-limit")).toBe("2000");
    expect(r.headers.get("ratelimit-remaining")).toBe("1999");
    const secondsToMidnightMyt = Math.ceil((Date.parse("2026-11-15T16:00:00Z") - server.clock()) / 1000);
    expect(r.headers.get("ratelimit-reset")).toBe(String(secondsToMidnightMyt));
  });
});

describe("error table", () => {
  const expectError = (r: ApiAnswer, status: number, code: string) => {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(Object.keys(r.body)).toEqual(ErrorBodySchema.fields.map((f) => f.name));
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe(code);
    expect(typeof r.body.message).toBe("string");
    expect(r.body.message.length).toBeGreaterThan(0);
  };

  it("401 api_key_required without a key (or an empty one)", async () => {
    expectError(await signals("?symbols=BTC"), 401, "api_key_required");
    expectError(await signals("?symbols=BTC", undefined, { "x-api-key": "" }), 401, "api_key_required");
  });

  it("401 invalid_api_key for unknown, malformed and odd-character keys", async () => {
    const { apiKey } = await server.account();
    for (const key of [
      `sig_live_${"A".repeat(32)}`,
      "nonsense",
      `${apiKey}x`,
      "sig_live_ÄÖÜ",
      "'; DROP TABLE accounts;--",
      "k".repeat(4000),
    ]) {
      expectError(await signals("?symbols=BTC", key), 401, "invalid_api_key");
    }
  });

  it("403 node_tier_required for other plans, before subscription and credit checks", async () => {
    const { apiKey } = await server.account({ plan: "pro", subscriptionUntil: new Date(server.clock() - 1) });
    expectError(await signals("", apiKey), 403, "node_tier_required");
  });

  it("403 subscription_inactive after expiry, before the credit check; renewal restores the same key", async () => {
    const { accountId, apiKey } = await server.account({ subscriptionUntil: new Date(server.clock() - 1) });
    await adjustTokens(server.db.handle, accountId, "adjustment", -10_000, "drain", server.config.limits);
    expectError(await signals("", apiKey), 403, "subscription_inactive");
  });

  it("402 insufficient_credits with no Tokens, before the daily cap", async () => {
    const { accountId, apiKey } = await server.account();
    await adjustTokens(server.db.handle, accountId, "adjustment", -10_000, "drain", server.config.limits);
    const r = await signals("", apiKey);
    expectError(r, 402, "insufficient_credits");
    expect(r.headers.get("ratelimit-remaining")).toBe("2000");
  });

  it("refused calls are not charged and do not count toward the cap", async () => {
    const { accountId } = await server.account({ plan: "pro" });
    const before = await ledgerCheck(server.db.handle, accountId);
    for (let i = 0; i < 5; i++) await signals("", `sig_live_${"B".repeat(32)}`);
    expect(await ledgerCheck(server.db.handle, accountId)).toEqual(before);
  });

  it("answers POST with 405 and unknown paths with 404, in the error body shape", async () => {
    const post = await apiRequest(server.baseUrl, "/api/v1/signals", { method: "POST", contract: true });
    expect(post.status).toBe(405);
    expect(post.body).toMatchObject({ ok: false, error: "method_not_allowed" });
    const missing = await apiRequest(server.baseUrl, "/api/v1/nothing", { contract: true });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ ok: false, error: "not_found" });
  });
});

describe("daily cap", () => {
  it("429 rate_limited with Retry-After once the cap is reached; resets at 00:00 MYT", async () => {
    const capped = await startTestServer({ env: { DAILY_CAP: "2" } });
    try {
      const { apiKey } = await capped.account();
      const call = () => fetch(`${capped.baseUrl}/api/v1/signals`, { headers: { "x-api-key": apiKey } });
      expect((await call()).status).toBe(200);
      expect((await call()).headers.get("ratelimit-remaining")).toBe("0");
      const refused = await call();
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ ok: false, error: "rate_limited" });
      expect(refused.headers.get("retry-after")).toBe(refused.headers.get("ratelimit-reset"));
      capped.clock.set(Date.parse("2026-11-15T16:00:00Z"));
      expect((await call()).status).toBe(200);
    } finally {
      await capped.close();
    }
  });
});

describe("concurrency", () => {
  it("300 simultaneous calls on 100 Tokens: 100 × 200, 200 × 402, balance 0, ledger sums", async () => {
    const { accountId, apiKey } = await server.account();
    await adjustTokens(server.db.handle, accountId, "adjustment", -9_900, "leave 100", server.config.limits);
    const statuses = await Promise.all(
      Array.from({ length: 300 }, () =>
        fetch(`${server.baseUrl}/api/v1/signals`, { headers: { "x-api-key": apiKey } }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 402)).toHaveLength(200);
    const check = await ledgerCheck(server.db.handle, accountId);
    expect(check.grantBalance + check.packBalance).toBe(0);
    expect(check.charges).toBe(100);
    expect(ledgerBalances(check)).toBe(true);
  });
});

describe("transport", () => {
  it("serves REST over HTTP/2 cleartext on the same port", async () => {
    const { apiKey } = await server.account();
    const session = http2.connect(server.baseUrl);
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": "/api/v1/signals?symbols=BTC&tf=1h", "x-api-key": apiKey });
        let data = "";
        req.setEncoding("utf8");
        req.on("data", (d) => (data += d));
        req.on("end", () => resolve(data));
        req.on("error", reject);
      });
      expect(JSON.parse(body)).toMatchObject({ ok: true, tf: "1h", signals: [{ symbol: "BTC", signal: "LONG" }] });
    } finally {
      session.close();
    }
  });
});

describe("hostile input", () => {
  /** Sends raw bytes and returns the status line (or "closed"). */
  function raw(request: string | Buffer): Promise<string> {
    return new Promise((resolve) => {
      const socket = net.connect(server.port, "127.0.0.1");
      let data = "";
      socket.on("data", (d) => (data += d.toString("latin1")));
      const done = () => resolve(data.split("\r\n")[0] || "closed");
      socket.on("close", done);
      socket.on("error", done);
      // Not end(): a half-closed socket may be reset before the server's answer is read.
      socket.write(request);
      setTimeout(() => socket.destroy(), 2_000).unref();
    });
  }

  it("never answers 5xx to odd query strings", async () => {
    const { apiKey } = await server.account();
    const queries = [
      `?symbols=${"A,".repeat(3000)}`,
      "?symbols=%00%FF%FE",
      "?symbols=%E2%82%AC,%F0%9F%92%A9",
      "?symbols=%ZZ",
      "?tf=%00&tf=%FF",
      `?symbols=BTC&symbols=ETH&symbols=${"x".repeat(5000)}`,
      `?${"&".repeat(2000)}`,
      "?symbols[]=BTC&__proto__=1&constructor=2",
    ];
    for (const q of queries) {
      const r = await signals(q, apiKey);
      expect(r.status, q.slice(0, 40)).toBe(200);
      expect(r.body.ok).toBe(true);
      expect(r.body.signals.length).toBeLessThanOrEqual(8);
    }
  });

  it("accepts a 10 KB header and refuses oversized header blocks with 431, not 5xx", async () => {
    const { apiKey } = await server.account();
    expect((await signals("", apiKey, { "x-padding": "p".repeat(10 * 1024) })).status).toBe(200);
    const status = await raw(
      `GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\nx-big: ${"q".repeat(64 * 1024)}\r\n\r\n`,
    );
    expect(status).toMatch(/^HTTP\/1\.1 431/);
  });

  it("answers a binary key header with 401 and garbage requests with 400", async () => {
    const keyStatus = await raw(
      Buffer.concat([
        Buffer.from("GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-api-key: "),
        Buffer.from([0x80, 0xff, 0xfe]),
        Buffer.from("\r\nConnection: close\r\n\r\n"),
      ]),
    );
    expect(keyStatus).toMatch(/^HTTP\/1\.1 401/);
    expect(await raw(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xff, 0x01, 0x00]))).toMatch(/^(HTTP\/1\.1 400|closed)/);
    expect(await raw("GARBAGE\r\n\r\n")).toMatch(/^HTTP\/1\.1 400/);
  });
});
