/**
 * SignalsService over every RPC protocol, with real clients against a real server on one port:
 * a stock @grpc/grpc-js client (cleartext HTTP/2, the same port as REST), and connect-node
 * clients for gRPC, Connect (HTTP/1.1 and HTTP/2, binary and JSON) and gRPC-Web (HTTP/1.1).
 *
 * Success: every protocol returns the same data as REST, each call costs exactly one Token and
 * carries the RateLimit headers as response metadata. Errors: the whole error table, with the
 * machine code read from the google.rpc.ErrorInfo detail (findDetails for connect clients; the
 * grpc-status-details-bin trailer decoded as google.rpc.Status for grpc-js), the check order
 * when several refusals apply, and refused calls leaving balances, usage and ledger untouched.
 */

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { type Any, AnySchema, anyIs, anyUnpack } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  type GetSignalsRequest,
  GetSignalsRequestSchema,
  type GetSignalsResponse,
  GetSignalsResponseSchema,
  Signal,
  SignalsService,
} from "../../gen/signals/v1/signals_pb.js";
import { getAccountSummary, regenerateKey, setSubscription } from "../../src/accounts/accounts.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import { nextMytMidnight } from "../../src/clock.ts";
import type { SignalSnapshot } from "../../src/market/snapshot.ts";
import type { Timeframe } from "../../src/market/timeframes.ts";
import { apiRequest } from "../support/api-request.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

const DEADLINE_MS = 10_000;
const GRANT = 10_000;
const BILLING = "1 energy credit per call (node / founding seats only)";

// ---------------------------------------------------------------------------------------------
// A small fixed snapshot, so that the ok:true entry shape (double, optional, nested message,
// enum, negative int32) round-trips through every wire format, next to the ok:false reasons.
// Only tf=1h has readings; on the 4h fallback every well-formed coin is no_data.
// ---------------------------------------------------------------------------------------------
const BTC_1H = {
  price: 64210.5,
  signal: "LONG" as const,
  confirmed: true,
  defense: 63120.25,
  arming: { dir: -1 as const, score: 6, trigger: 63500, invalidation: 64890.75 },
  atrPct: 0.84,
  signalId: "BTC-1h-1795302000000",
};
const ETH_1H = {
  price: 3120.125,
  signal: "NONE" as const,
  confirmed: false,
  defense: null,
  arming: null,
  atrPct: 1.5,
  signalId: null,
};

const protocolSnapshot: SignalSnapshot = {
  lookup(symbol: string, tf: Timeframe) {
    if (symbol === "NEWCOIN") return { ok: false, reason: "unknown_symbol" };
    if (symbol === "OLDCOIN") return { ok: false, reason: "stale" };
    if (tf === "1h" && symbol === "BTC") return { ok: true, reading: BTC_1H };
    if (tf === "1h" && symbol === "ETH") return { ok: true, reading: ETH_1H };
    return { ok: false, reason: "no_data" };
  },
};

// ---------------------------------------------------------------------------------------------
// One shape for every protocol's answer.
// ---------------------------------------------------------------------------------------------
type Success = { ok: true; response: GetSignalsResponse; headers: Headers };
type Failure = {
  ok: false;
  /** gRPC status code (connect's Code uses the same numbers). */
  code: number;
  /** reason of the google.rpc.ErrorInfo detail in domain signals.v1, if any. */
  reason: string | undefined;
  domain: string | undefined;
  /** Response headers and trailers together. */
  metadata: Headers;
  /** grpc-js only: the code inside the google.rpc.Status of grpc-status-details-bin. */
  statusDetailsCode?: number;
};
type Outcome = Success | Failure;
type SignalsRequest = { symbols?: string; tf?: string };

interface Caller {
  readonly name: string;
  call(apiKey: string | null, request?: SignalsRequest): Promise<Outcome>;
  close(): void;
}

/** google.rpc.Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; } */
function decodeRpcStatus(bytes: Uint8Array): { code: number; message: string; details: Any[] } {
  // gen/ has google/rpc/error_details but not google/rpc/status, so the three fields of
  // google.rpc.Status are read with the wire reader; each detail is a google.protobuf.Any.
  const reader = new BinaryReader(bytes);
  const status = { code: 0, message: "", details: [] as Any[] };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.Varint) status.code = reader.int32();
    else if (field === 2 && wireType === WireType.LengthDelimited) status.message = reader.string();
    else if (field === 3 && wireType === WireType.LengthDelimited)
      status.details.push(fromBinary(AnySchema, reader.bytes()));
    else reader.skip(wireType);
  }
  return status;
}

function metadataToHeaders(...all: (grpc.Metadata | undefined)[]): Headers {
  const headers = new Headers();
  for (const md of all) {
    if (!md) continue;
    for (const [key, value] of Object.entries(md.getMap())) {
      if (typeof value === "string") headers.append(key, value);
    }
  }
  return headers;
}

function grpcJsCaller(port: number): Caller {
  const Ctor = grpc.makeGenericClientConstructor(
    {
      GetSignals: {
        path: "/signals.v1.SignalsService/GetSignals",
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: GetSignalsRequest) => Buffer.from(toBinary(GetSignalsRequestSchema, m)),
        requestDeserialize: (b: Buffer) => fromBinary(GetSignalsRequestSchema, b),
        responseSerialize: (m: GetSignalsResponse) => Buffer.from(toBinary(GetSignalsResponseSchema, m)),
        responseDeserialize: (b: Buffer) => fromBinary(GetSignalsResponseSchema, b),
      },
    },
    "SignalsService",
  );
  // Same port as REST: the listener tells HTTP/2 prior-knowledge connections apart by their preface.
  const client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const getSignals = client.GetSignals!.bind(client) as (
    request: GetSignalsRequest,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, response?: GetSignalsResponse) => void,
  ) => grpc.ClientUnaryCall;
  return {
    name: "gRPC (@grpc/grpc-js, HTTP/2 cleartext)",
    call(apiKey, request = {}) {
      const metadata = new grpc.Metadata();
      if (apiKey !== null) metadata.add("x-api-key", apiKey);
      return new Promise<Outcome>((resolve) => {
        let initial: grpc.Metadata | undefined;
        let response: GetSignalsResponse | undefined;
        let error: grpc.ServiceError | null = null;
        let done = 0;
        const finish = (status: grpc.StatusObject) => {
          if (!error && response) {
            resolve({ ok: true, response, headers: metadataToHeaders(initial) });
            return;
          }
          const trailers = status.metadata;
          const bin = trailers.get("grpc-status-details-bin")[0];
          let info: ErrorInfo | undefined;
          let statusDetailsCode: number | undefined;
          if (bin !== undefined) {
            const decoded = decodeRpcStatus(typeof bin === "string" ? Buffer.from(bin, "base64") : bin);
            statusDetailsCode = decoded.code;
            const any = decoded.details.find((d) => anyIs(d, ErrorInfoSchema));
            info = any ? anyUnpack(any, ErrorInfoSchema) : undefined;
          }
          resolve({
            ok: false,
            code: status.code,
            reason: info?.reason,
            domain: info?.domain,
            metadata: metadataToHeaders(initial, trailers),
            statusDetailsCode,
          });
        };
        let finalStatus: grpc.StatusObject | undefined;
        const settle = () => {
          if (++done === 2) finish(finalStatus!);
        };
        const call = getSignals(
          create(GetSignalsRequestSchema, request),
          metadata,
          { deadline: Date.now() + DEADLINE_MS },
          (err, res) => {
            error = err;
            response = res;
            settle();
          },
        );
        call.on("metadata", (md: grpc.Metadata) => {
          initial = md;
        });
        call.on("status", (status: grpc.StatusObject) => {
          finalStatus = status;
          settle();
        });
      });
    },
    close: () => client.close(),
  };
}

function connectCaller(name: string, transport: Transport, onClose: () => void = () => {}): Caller {
  const client = createClient(SignalsService, transport);
  return {
    name,
    async call(apiKey, request = {}) {
      const headers = new Headers();
      const trailers = new Headers();
      try {
        const response = await client.getSignals(request, {
          headers: apiKey === null ? {} : { "x-api-key": apiKey },
          timeoutMs: DEADLINE_MS,
          onHeader: (h) => {
            for (const [k, v] of h) headers.append(k, v);
          },
          onTrailer: (t) => {
            for (const [k, v] of t) trailers.append(k, v);
          },
        });
        return { ok: true, response, headers };
      } catch (e) {
        const err = ConnectError.from(e);
        const info = err.findDetails(ErrorInfoSchema)[0];
        return { ok: false, code: err.code, reason: info?.reason, domain: info?.domain, metadata: err.metadata };
      }
    },
    close: onClose,
  };
}

function allCallers(port: number): Caller[] {
  const baseUrl = `http://127.0.0.1:${port}`;
  const h2 = (name: string, make: (sessionManager: Http2SessionManager) => Transport) => {
    const sessionManager = new Http2SessionManager(baseUrl);
    return connectCaller(name, make(sessionManager), () => sessionManager.abort());
  };
  return [
    grpcJsCaller(port),
    h2("gRPC (connect-node createGrpcTransport)", (sessionManager) => createGrpcTransport({ baseUrl, sessionManager })),
    connectCaller(
      "Connect binary, HTTP/1.1",
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    ),
    connectCaller(
      "Connect JSON, HTTP/1.1",
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
    ),
    h2("Connect binary, HTTP/2", (sessionManager) =>
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, sessionManager }),
    ),
    h2("Connect JSON, HTTP/2", (sessionManager) =>
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: false, sessionManager }),
    ),
    connectCaller("gRPC-Web, HTTP/1.1", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })),
  ];
}

/** The protocol-independent content of a response, in the REST contract's shape. */
function normalise(r: GetSignalsResponse): Record<string, unknown> {
  return {
    ok: r.ok,
    tf: r.tf,
    ts: Number(r.ts),
    signals: r.signals.map((e) =>
      e.ok
        ? {
            symbol: e.symbol,
            tf: e.tf,
            ok: true,
            price: e.price,
            signal: Signal[e.signal],
            confirmed: e.confirmed,
            defense: e.defense ?? null,
            arming: e.arming
              ? {
                  dir: e.arming.dir,
                  score: e.arming.score,
                  trigger: e.arming.trigger,
                  invalidation: e.arming.invalidation,
                }
              : null,
            atr_pct: e.atrPct,
            signal_id: e.signalId ?? null,
          }
        : { symbol: e.symbol, tf: e.tf, ok: false, reason: e.reason },
    ),
    tier: r.tier,
    billing: r.billing,
    credits_left: Number(r.creditsLeft),
  };
}

function expectSuccess(outcome: Outcome, protocol: string): Success {
  if (!outcome.ok) throw new Error(`${protocol}: expected success, got code ${outcome.code} reason ${outcome.reason}`);
  return outcome;
}

function expectRefusal(outcome: Outcome, protocol: string, code: number, reason: string): Failure {
  expect(outcome.ok, `${protocol}: call should be refused with ${reason}`).toBe(false);
  const failure = outcome as Failure;
  expect({
    protocol,
    code: failure.code,
    reason: failure.reason,
    domain: failure.domain,
    trailer: failure.metadata.get("x-error-code"),
  }).toEqual({
    protocol,
    code,
    reason,
    domain: "signals.v1",
    trailer: reason,
  });
  // grpc-js: the google.rpc.Status in grpc-status-details-bin must agree with grpc-status.
  if (failure.statusDetailsCode !== undefined) expect(failure.statusDetailsCode).toBe(code);
  return failure;
}

/** Balance, usage and ledger state that a refused call must leave exactly as it was. */
async function accountState(server: TestServer, accountId: number) {
  const check = await ledgerCheck(server.db.handle, accountId);
  expect(ledgerBalances(check)).toBe(true);
  const summary = await getAccountSummary(server.db.handle, accountId, server.clock());
  return { ...check, callsToday: summary.callsToday, creditsLeft: summary.tokensLeft };
}

async function drain(server: TestServer, accountId: number, toLeave: number) {
  const { tokensLeft } = await getAccountSummary(server.db.handle, accountId, server.clock());
  expect(
    await adjustTokens(
      server.db.handle,
      accountId,
      "adjustment",
      toLeave - tokensLeft,
      "test: drain",
      server.config.limits,
    ),
  ).toBe("ok");
  expect((await getAccountSummary(server.db.handle, accountId, server.clock())).tokensLeft).toBe(toLeave);
}

const UNAUTHENTICATED = grpc.status.UNAUTHENTICATED;
const PERMISSION_DENIED = grpc.status.PERMISSION_DENIED;
const RESOURCE_EXHAUSTED = grpc.status.RESOURCE_EXHAUSTED;

describe("SignalsService over gRPC, Connect and gRPC-Web", () => {
  let server: TestServer;
  let callers: Caller[];

  beforeAll(async () => {
    server = await startTestServer({ snapshot: protocolSnapshot });
    callers = allCallers(server.port);
  });

  afterAll(async () => {
    for (const caller of callers ?? []) caller.close();
    await server?.close();
  });

  it("serves the same data as REST on every protocol, charging exactly one Token per call", async () => {
    const { accountId, apiKey } = await server.account();
    const query = { symbols: " btc, eth ,B-D,btc,,NEWCOIN,oldcoin,sol", tf: "1h" };
    const first = await apiRequest(server.baseUrl, `/api/v1/signals?${new URLSearchParams(query)}`, { key: apiKey });
    expect(first.status).toBe(200);
    const expected = {
      ok: true,
      tf: "1h",
      ts: server.clock(),
      signals: [
        {
          symbol: "BTC",
          tf: "1h",
          ok: true,
          price: 64210.5,
          signal: "LONG",
          confirmed: true,
          defense: 63120.25,
          arming: { dir: -1, score: 6, trigger: 63500, invalidation: 64890.75 },
          atr_pct: 0.84,
          signal_id: "BTC-1h-1795302000000",
        },
        {
          symbol: "ETH",
          tf: "1h",
          ok: true,
          price: 3120.125,
          signal: "NONE",
          confirmed: false,
          defense: null,
          arming: null,
          atr_pct: 1.5,
          signal_id: null,
        },
        { symbol: "B-D", tf: "1h", ok: false, reason: "invalid_symbol" },
        { symbol: "NEWCOIN", tf: "1h", ok: false, reason: "unknown_symbol" },
        { symbol: "OLDCOIN", tf: "1h", ok: false, reason: "stale" },
        { symbol: "SOL", tf: "1h", ok: false, reason: "no_data" },
      ],
      tier: "node",
      billing: BILLING,
      credits_left: GRANT - 1,
    };
    expect(first.body).toEqual(expected);

    for (const [i, caller] of callers.entries()) {
      const outcome = expectSuccess(await caller.call(apiKey, query), caller.name);
      expect({ protocol: caller.name, ...normalise(outcome.response) }).toEqual({
        protocol: caller.name,
        ...expected,
        credits_left: GRANT - 2 - i,
      });
    }

    const after = await accountState(server, accountId);
    expect(after.charges).toBe(callers.length + 1);
    expect(after.callsToday).toBe(callers.length + 1);
    expect(after.creditsLeft).toBe(GRANT - callers.length - 1);
    expect(after.grantBalance).toBe(GRANT - callers.length - 1);
  });

  it("falls back to 4h, keeps request order and answers no_data / invalid_symbol on every protocol", async () => {
    const { apiKey } = await server.account();
    for (const [i, caller] of callers.entries()) {
      const outcome = expectSuccess(
        await caller.call(apiKey, { symbols: "eth,B-D,btc,BTCUSDT,x_y", tf: "2h" }),
        caller.name,
      );
      expect({ protocol: caller.name, ...normalise(outcome.response) }).toEqual({
        protocol: caller.name,
        ok: true,
        tf: "4h",
        ts: server.clock(),
        signals: [
          { symbol: "ETH", tf: "4h", ok: false, reason: "no_data" },
          { symbol: "B-D", tf: "4h", ok: false, reason: "invalid_symbol" },
          { symbol: "BTC", tf: "4h", ok: false, reason: "no_data" },
          { symbol: "BTCUSDT", tf: "4h", ok: false, reason: "no_data" },
          { symbol: "X_Y", tf: "4h", ok: false, reason: "invalid_symbol" },
        ],
        tier: "node",
        billing: BILLING,
        credits_left: GRANT - 1 - i,
      });
    }
  });

  it("uses the default coins and the 4h timeframe when the request is empty", async () => {
    const { apiKey } = await server.account();
    for (const caller of callers) {
      const outcome = expectSuccess(await caller.call(apiKey, {}), caller.name);
      expect(outcome.response.tf, caller.name).toBe("4h");
      expect(
        outcome.response.signals.map((s) => `${s.symbol}/${s.tf}/${s.reason}`),
        caller.name,
      ).toEqual(["BTC", "ETH", "SOL", "BNB", "XRP"].map((s) => `${s}/4h/no_data`));
    }
  });

  it("sends the RateLimit headers as response metadata on every protocol", async () => {
    const { apiKey } = await server.account();
    const resetSeconds = String((nextMytMidnight(server.clock()) - server.clock()) / 1000);
    expect(resetSeconds).toBe("43200"); // the test clock starts at 12:00 MYT
    for (const [i, caller] of callers.entries()) {
      const { headers } = expectSuccess(await caller.call(apiKey, { symbols: "BTC" }), caller.name);
      expect({
        protocol: caller.name,
        limit: headers.get("ratelimit-limit"),
        remaining: headers.get("ratelimit-remaining"),
        reset: headers.get("ratelimit-reset"),
      }).toEqual({ protocol: caller.name, limit: "2000", remaining: String(2000 - 1 - i), reset: resetSeconds });
    }
  });

  describe("the error table", () => {
    async function refusedEverywhere(
      apiKey: string | null,
      code: number,
      reason: string,
      accountId?: number,
    ): Promise<Failure[]> {
      const before = accountId === undefined ? null : await accountState(server, accountId);
      const failures: Failure[] = [];
      for (const caller of callers)
        failures.push(expectRefusal(await caller.call(apiKey, { symbols: "BTC" }), caller.name, code, reason));
      if (accountId !== undefined) expect(await accountState(server, accountId)).toEqual(before);
      return failures;
    }

    it("answers UNAUTHENTICATED api_key_required when no key is sent", async () => {
      await refusedEverywhere(null, UNAUTHENTICATED, "api_key_required");
      await refusedEverywhere("", UNAUTHENTICATED, "api_key_required");
    });

    it("answers UNAUTHENTICATED invalid_api_key for malformed, unknown and regenerated keys", async () => {
      await refusedEverywhere("not-a-key", UNAUTHENTICATED, "invalid_api_key");
      await refusedEverywhere(`sig_live_${"A".repeat(32)}`, UNAUTHENTICATED, "invalid_api_key");
      const { accountId, apiKey } = await server.account();
      const { apiKey: newKey } = await regenerateKey(server.db.handle, accountId, server.clock());
      await refusedEverywhere(apiKey, UNAUTHENTICATED, "invalid_api_key", accountId);
      expectSuccess(await callers[0]!.call(newKey), "new key");
    });

    it("answers PERMISSION_DENIED node_tier_required for a plan other than node / founding_seat", async () => {
      const { accountId, apiKey } = await server.account({ plan: "pro" });
      await adjustTokens(
        server.db.handle,
        accountId,
        "pack",
        50,
        "test: credits do not buy access",
        server.config.limits,
      );
      await refusedEverywhere(apiKey, PERMISSION_DENIED, "node_tier_required", accountId);
      const founding = await server.account({ plan: "founding_seat" });
      const ok = expectSuccess(await callers[0]!.call(founding.apiKey), "founding_seat");
      expect(ok.response.tier).toBe("node");
    });

    it(
      "answers PERMISSION_DENIED subscription_inactive once the " +
        "subscription has ended, and serves again after renewal",
      async () => {
        const expired = await server.account({ subscriptionUntil: new Date(server.clock() - 1000) });
        await refusedEverywhere(expired.apiKey, PERMISSION_DENIED, "subscription_inactive", expired.accountId);

        // The end instant itself is already inactive: move the clock onto it.
        const until = server.clock() + 3_600_000;
        const { accountId, apiKey } = await server.account({ subscriptionUntil: new Date(until) });
        const start = server.clock();
        try {
          expectSuccess(await callers[0]!.call(apiKey), "before the end");
          server.clock.set(until);
          await refusedEverywhere(apiKey, PERMISSION_DENIED, "subscription_inactive", accountId);
          await setSubscription(server.db.handle, accountId, new Date(until + 86_400_000), server.clock());
          expectSuccess(await callers[0]!.call(apiKey), "after renewal");
        } finally {
          server.clock.set(start);
        }
      },
    );

    it("answers RESOURCE_EXHAUSTED insufficient_credits when grant and packs are empty", async () => {
      const { accountId, apiKey } = await server.account();
      await drain(server, accountId, 1);
      const last = expectSuccess(await callers[0]!.call(apiKey), "last Token");
      expect(last.response.creditsLeft).toBe(0n);
      await refusedEverywhere(apiKey, RESOURCE_EXHAUSTED, "insufficient_credits", accountId);
      await adjustTokens(server.db.handle, accountId, "pack", 2, "test: top up", server.config.limits);
      const again = expectSuccess(await callers[1]!.call(apiKey), "after a pack");
      expect(again.response.creditsLeft).toBe(1n);
    });

    it(
      "checks plan before subscription before credits (pro " + "AND expired AND no Tokens → node_tier_required)",
      async () => {
        const { accountId, apiKey } = await server.account({
          plan: "pro",
          subscriptionUntil: new Date(server.clock() - 1000),
        });
        expect((await accountState(server, accountId)).creditsLeft).toBe(0); // other plans get no grant
        await refusedEverywhere(apiKey, PERMISSION_DENIED, "node_tier_required", accountId);
      },
    );

    it("checks subscription before credits (expired AND no Tokens → subscription_inactive)", async () => {
      const { accountId, apiKey } = await server.account({ subscriptionUntil: new Date(server.clock() - 1000) });
      await drain(server, accountId, 0);
      await refusedEverywhere(apiKey, PERMISSION_DENIED, "subscription_inactive", accountId);
    });
  });
});

describe("the daily cap over gRPC, Connect and gRPC-Web (DAILY_CAP=3)", () => {
  let server: TestServer;
  let callers: Caller[];

  beforeAll(async () => {
    server = await startTestServer({ env: { DAILY_CAP: "3" } });
    callers = allCallers(server.port);
  });

  afterAll(async () => {
    for (const caller of callers ?? []) caller.close();
    await server?.close();
  });

  async function useUpTheCap(apiKey: string) {
    for (const [i, caller] of callers.slice(0, 3).entries()) {
      const { headers } = expectSuccess(await caller.call(apiKey), caller.name);
      expect(headers.get("ratelimit-limit")).toBe("3");
      expect(headers.get("ratelimit-remaining")).toBe(String(2 - i));
    }
  }

  it(
    "answers RESOURCE_EXHAUSTED rate_limited with Retry-After " +
      "once the cap is reached, free of charge, until 00:00 MYT",
    async () => {
      const { accountId, apiKey } = await server.account();
      await useUpTheCap(apiKey);
      const before = await accountState(server, accountId);
      expect(before.callsToday).toBe(3);
      expect(before.charges).toBe(3);
      const resetSeconds = String((nextMytMidnight(server.clock()) - server.clock()) / 1000);
      for (const caller of callers) {
        const failure = expectRefusal(await caller.call(apiKey), caller.name, RESOURCE_EXHAUSTED, "rate_limited");
        expect({
          protocol: caller.name,
          remaining: failure.metadata.get("ratelimit-remaining"),
          retryAfter: failure.metadata.get("retry-after"),
        }).toEqual({ protocol: caller.name, remaining: "0", retryAfter: resetSeconds });
      }
      expect(await accountState(server, accountId)).toEqual(before);

      const start = server.clock();
      try {
        server.clock.set(nextMytMidnight(start));
        const next = expectSuccess(await callers[0]!.call(apiKey), "next MYT day");
        expect(next.headers.get("ratelimit-remaining")).toBe("2");
        expect(next.response.creditsLeft).toBe(BigInt(GRANT - 4));
      } finally {
        server.clock.set(start);
      }
    },
  );

  it("checks credits before the cap (no Tokens AND cap reached → insufficient_credits)", async () => {
    const { accountId, apiKey } = await server.account();
    await drain(server, accountId, 3);
    await useUpTheCap(apiKey);
    const state = await accountState(server, accountId);
    expect({ credits: state.creditsLeft, calls: state.callsToday }).toEqual({ credits: 0, calls: 3 });
    for (const caller of callers)
      expectRefusal(await caller.call(apiKey), caller.name, RESOURCE_EXHAUSTED, "insufficient_credits");
    expect(await accountState(server, accountId)).toEqual(state);
  });

  it("checks subscription before the cap (expired AND cap reached → subscription_inactive)", async () => {
    const { accountId, apiKey } = await server.account();
    await useUpTheCap(apiKey);
    await setSubscription(server.db.handle, accountId, new Date(server.clock() - 1), server.clock());
    const state = await accountState(server, accountId);
    for (const caller of callers)
      expectRefusal(await caller.call(apiKey), caller.name, PERMISSION_DENIED, "subscription_inactive");
    expect(await accountState(server, accountId)).toEqual(state);
  });
});
