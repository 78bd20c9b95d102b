/**
 * GET /api/v1/usage and UsageService.GetUsage against a real server: the REST JSON contract
 * from the descriptor, equality with the last paid call's credits_left, the lazily applied
 * monthly grant reported before it is written, 200 usage calls that change nothing (balances,
 * ledger, calls_today), the key error table, any plan, the shared free rate limit, and gRPC parity.
 */

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ErrorBodySchema } from "../../gen/signals/v1/errors_pb.js";
import { GetUsageResponseSchema, UsageService } from "../../gen/signals/v1/usage_pb.js";
import { regenerateKey, setSubscription } from "../../src/accounts/accounts.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import { apiRequest } from "../support/api-request.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { expectProtoJson } from "../support/proto-json.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

type Json = Record<string, any>;

/** A GET on `server`, checked against the OpenAPI document. */
const checkedGet = (server: TestServer, path: string, key?: string) =>
  apiRequest(server.baseUrl, path, { key, contract: true });

const expectError = (r: { status: number; body: Json }, status: number, code: string) => {
  expect({ status: r.status, error: r.body.error }, JSON.stringify(r.body)).toEqual({ status, error: code });
  expect(Object.keys(r.body)).toEqual(ErrorBodySchema.fields.map((f) => f.name));
};

/** Everything a usage call must not change, per account. */
async function footprint(server: TestServer, accountId: number) {
  const [row] = await server.db.handle.rows<Json>(sql`
    SELECT grant_balance, pack_balance, grant_month, usage_day, calls_today,
           (SELECT count(*) FROM ledger_entries l WHERE l.account_id = a.id) AS ledger_rows,
           (SELECT count(*) FROM outbox o WHERE o.account_id = a.id) AS outbox_rows
      FROM accounts a WHERE a.id = ${accountId}`);
  return JSON.stringify(row);
}

describe("GET /api/v1/usage", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { FREE_RATE_LIMIT: "1000", DAILY_CAP: "50" } });
  });
  afterAll(() => server?.close());

  it("answers the REST JSON of GetUsageResponse with the times in epoch ms and MYT ISO-8601", async () => {
    const { apiKey } = await server.account({ subscriptionUntil: new Date("2027-12-31T15:59:59Z") });
    const r = await checkedGet(server, "/api/v1/usage", apiKey);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    expectProtoJson(r.body, GetUsageResponseSchema);
    const now = server.clock();
    expect(r.body).toMatchObject({
      ok: true,
      ts: now,
      plan: "node",
      subscription_until: Date.parse("2027-12-31T15:59:59Z"),
      subscription_until_at: "2027-12-31T23:59:59+08:00",
      credits_left: 10_000,
      grant_credits: 10_000,
      pack_credits: 0,
      monthly_grant: 10_000,
      calls_today: 0,
      daily_cap: 50,
      // The test clock is 2026-11-15T04:00Z = 12:00 MYT.
      daily_reset_ts: Date.parse("2026-11-15T16:00:00Z"),
      daily_reset_at: "2026-11-16T00:00:00+08:00",
      next_grant_ts: Date.parse("2026-11-30T16:00:00Z"),
      next_grant_at: "2026-12-01T00:00:00+08:00",
    });
    expect(Number(r.headers.get("ratelimit-limit"))).toBe(1000);
    expect(Number(r.headers.get("ratelimit-remaining"))).toBe(999);
    expect(r.headers.get("cache-control")).toBe("no-store");
  });

  it("after N paid calls equals the last one's credits_left, and the next paid call answers one less", async () => {
    const { apiKey, accountId } = await server.account();
    await adjustTokens(server.db.handle, accountId, "pack", 7, "test pack", server.config.limits);
    let last: Json = {};
    for (let i = 0; i < 6; i++) {
      const paid = await checkedGet(server, "/api/v1/signals?symbols=BTC", apiKey);
      expect(paid.status).toBe(200);
      last = paid.body;
    }
    const usage = await checkedGet(server, "/api/v1/usage", apiKey);
    expect(usage.body.credits_left).toBe(last.credits_left);
    expect(usage.body.credits_left).toBe(usage.body.grant_credits + usage.body.pack_credits);
    expect(usage.body).toMatchObject({ grant_credits: 9_994, pack_credits: 7, calls_today: 6 });
    const next = await checkedGet(server, "/api/v1/signals?symbols=BTC", apiKey);
    expect(next.body.credits_left).toBe(usage.body.credits_left - 1);
    expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
  });

  it("200 usage calls change nothing: balances, ledger, outbox, calls_today and the daily cap", async () => {
    const { apiKey, accountId } = await server.account();
    await checkedGet(server, "/api/v1/signals", apiKey);
    const before = await footprint(server, accountId);
    const first = await checkedGet(server, "/api/v1/usage", apiKey);
    const answers = await Promise.all(Array.from({ length: 199 }, () => checkedGet(server, "/api/v1/usage", apiKey)));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body).toEqual(first.body);
    }
    expect(await footprint(server, accountId)).toBe(before);
    expect(first.body.calls_today).toBe(1);
    // Still under the daily cap of 50 charged calls: usage calls did not count toward it.
    const paid = await checkedGet(server, "/api/v1/signals", apiKey);
    expect(paid.status).toBe(200);
    expect(paid.headers.get("ratelimit-remaining")).toBe("48");
    expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
  });

  it("reports the new month's grant before the first charge of the month applies it (and writes nothing)", async () => {
    const { apiKey, accountId } = await server.account();
    await adjustTokens(server.db.handle, accountId, "pack", 5, "test pack", server.config.limits);
    for (let i = 0; i < 3; i++) await checkedGet(server, "/api/v1/signals", apiKey);
    const start = server.clock();
    try {
      // 2026-12-01T00:30 MYT: a new MYT month and a new MYT day.
      server.clock.set(Date.parse("2026-11-30T16:30:00Z"));
      const before = await footprint(server, accountId);
      const usage = await checkedGet(server, "/api/v1/usage", apiKey);
      expect(usage.body).toMatchObject({
        grant_credits: 10_000,
        pack_credits: 5,
        credits_left: 10_005,
        calls_today: 0,
        next_grant_at: "2027-01-01T00:00:00+08:00",
        daily_reset_at: "2026-12-02T00:00:00+08:00",
      });
      expect(await footprint(server, accountId)).toBe(before);
      const paid = await checkedGet(server, "/api/v1/signals", apiKey);
      expect(paid.body.credits_left).toBe(10_004);
      expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
    } finally {
      server.clock.set(start);
    }
  });

  it("any plan may read its own usage; a plan without grants has no next grant", async () => {
    const { apiKey } = await server.account({ plan: "basic" });
    const r = await checkedGet(server, "/api/v1/usage", apiKey);
    expect(r.status).toBe(200);
    expectProtoJson(r.body, GetUsageResponseSchema);
    expect(r.body).toMatchObject({
      plan: "basic",
      credits_left: 0,
      grant_credits: 0,
      next_grant_ts: null,
      next_grant_at: null,
    });
    expectError(await checkedGet(server, "/api/v1/signals", apiKey), 403, "node_tier_required");
  });

  it("refuses keys with the paid endpoint's table (plans aside), and charges nothing", async () => {
    expectError(await checkedGet(server, "/api/v1/usage"), 401, "api_key_required");
    expectError(await checkedGet(server, "/api/v1/usage", "sig_live_short"), 401, "invalid_api_key");
    expectError(await checkedGet(server, "/api/v1/usage", `sig_live_${"A".repeat(32)}`), 401, "invalid_api_key");
    const { apiKey, accountId } = await server.account();
    await regenerateKey(server.db.handle, accountId, server.clock());
    expectError(await checkedGet(server, "/api/v1/usage", apiKey), 401, "invalid_api_key");
    const expired = await server.account();
    await setSubscription(server.db.handle, expired.accountId, new Date(server.clock() - 1000), server.clock());
    expectError(await checkedGet(server, "/api/v1/usage", expired.apiKey), 403, "subscription_inactive");
  });

  it("answers the same over gRPC, with ErrorInfo codes on refusals", async () => {
    const { apiKey } = await server.account();
    const client = createClient(UsageService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const res = await client.getUsage({}, { headers: { "x-api-key": apiKey } });
    const rest = await checkedGet(server, "/api/v1/usage", apiKey);
    expect(Number(res.creditsLeft)).toBe(rest.body.credits_left);
    expect(res.dailyResetAt).toBe(rest.body.daily_reset_at);
    expect(Number(res.nextGrantTs)).toBe(rest.body.next_grant_ts);
    expect(res.callsToday).toBe(rest.body.calls_today);
    const err = await client.getUsage({}, {}).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    expect((err as ConnectError).findDetails(ErrorInfoSchema)[0]?.reason).toBe("api_key_required");
  });
});

describe("GET /api/v1/usage rate limit", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { FREE_RATE_LIMIT: "3" } });
  });
  afterAll(() => server?.close());

  it("shares the free endpoints' per-key budget and answers 429 with Retry-After past it", async () => {
    const { apiKey } = await server.account();
    expect((await checkedGet(server, "/api/v1/usage", apiKey)).status).toBe(200);
    expect((await checkedGet(server, "/api/v1/news", apiKey)).status).toBe(200);
    const third = await checkedGet(server, "/api/v1/usage", apiKey);
    expect(third.headers.get("ratelimit-remaining")).toBe("0");
    const refused = await checkedGet(server, "/api/v1/usage", apiKey);
    expectError(refused, 429, "rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("ratelimit-limit")).toBe("3");
  });
});
