/**
 * Idempotency-Key on the paid endpoint: a retried call within 24 h gets the first call's answer
 * and is not charged again, over REST and gRPC, also when the copies arrive at once; a key
 * reused for a different request is refused; refusals are not remembered.
 */

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { regenerateKey } from "../../src/accounts/accounts.ts";
import { purgeExpiredIdempotentCalls } from "../../src/billing/idempotent-charge.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import { apiRequest } from "../support/api-request.ts";
import { fixedSnapshot, SAMPLE_READINGS } from "../support/fixed-snapshot.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ snapshot: fixedSnapshot(SAMPLE_READINGS) });
});
afterAll(async () => {
  await server?.close();
});

/** A paid call with `key` (and an Idempotency-Key when given), checked against the OpenAPI document. */
const signals = (query: string, key: string, idempotencyKey?: string) =>
  apiRequest(server.baseUrl, `/api/v1/signals${query}`, {
    key,
    headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey },
    contract: true,
  });

const charges = async (accountId: number) => (await ledgerCheck(server.db.handle, accountId)).charges;

describe("Idempotency-Key over REST", () => {
  it("replays the first answer byte for byte, charged once, marked as replayed", async () => {
    const { accountId, apiKey } = await server.account();
    const first = await signals("?symbols=BTC,ETH&tf=1h", apiKey, "order-1");
    server.clock.advance(60_000);
    const second = await signals("?symbols=btc,%20eth&tf=1h", apiKey, "order-1");
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await charges(accountId)).toBe(1);
    // Another key is another call.
    const third = await signals("?symbols=BTC,ETH&tf=1h", apiKey, "order-2");
    expect(JSON.parse(third.text).credits_left).toBe(JSON.parse(first.text).credits_left - 1);
    expect(await charges(accountId)).toBe(2);
    expect(ledgerBalances(await ledgerCheck(server.db.handle, accountId))).toBe(true);
  });

  it("charges once for 25 copies sent at the same moment, and all get the same answer", async () => {
    const { accountId, apiKey } = await server.account();
    const answers = await Promise.all(Array.from({ length: 25 }, () => signals("?symbols=SOL&tf=1h", apiKey, "burst")));
    expect(answers.map((a) => a.status)).toEqual(Array(25).fill(200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(24);
    expect(await charges(accountId)).toBe(1);
  });

  it("refuses a key reused for another request with 422 idempotency_key_reused, uncharged", async () => {
    const { accountId, apiKey } = await server.account();
    expect((await signals("?symbols=BTC&tf=1h", apiKey, "k")).status).toBe(200);
    const other = await signals("?symbols=ETH&tf=1h", apiKey, "k");
    expect(other.status).toBe(422);
    expect(JSON.parse(other.text)).toMatchObject({ ok: false, error: "idempotency_key_reused" });
    const otherTf = await signals("?symbols=BTC&tf=4h", apiKey, "k");
    expect(otherTf.status).toBe(422);
    expect(await charges(accountId)).toBe(1);
  });

  it("does not remember refusals: after a pack, the same key is charged and answered", async () => {
    const { accountId, apiKey } = await server.account();
    await adjustTokens(server.db.handle, accountId, "adjustment", -10_000, "drain", server.config.limits);
    const refused = await signals("?symbols=BTC&tf=1h", apiKey, "retry-me");
    expect(refused.status).toBe(402);
    await adjustTokens(server.db.handle, accountId, "pack", 5, "pack of 5", server.config.limits);
    const ok = await signals("?symbols=BTC&tf=1h", apiKey, "retry-me");
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.text).credits_left).toBe(4);
    expect(await charges(accountId)).toBe(1);
  });

  it("forgets an answer after 24 hours", async () => {
    const { accountId, apiKey } = await server.account();
    const first = await signals("?symbols=BTC&tf=1h", apiKey, "daily");
    server.clock.advance(24 * 3600 * 1000 + 1000);
    const later = await signals("?symbols=BTC&tf=1h", apiKey, "daily");
    expect(later.status).toBe(200);
    expect(later.headers.get("idempotent-replayed")).toBeNull();
    expect(later.text).not.toBe(first.text);
    expect(await charges(accountId)).toBe(2);
    // The periodic purge deletes answers past the window, and only those.
    server.clock.advance(12 * 3600 * 1000);
    expect(await purgeExpiredIdempotentCalls(server.db.handle, server.clock())).toBeGreaterThanOrEqual(1);
    expect((await signals("?symbols=BTC&tf=1h", apiKey, "daily")).headers.get("idempotent-replayed")).toBe("true");
  });

  it("never replays to a regenerated (revoked) key", async () => {
    const { accountId, apiKey } = await server.account();
    expect((await signals("?symbols=BTC&tf=1h", apiKey, "kept")).status).toBe(200);
    const { apiKey: newKey } = await regenerateKey(server.db.handle, accountId, server.clock());
    const old = await signals("?symbols=BTC&tf=1h", apiKey, "kept");
    expect(old.status).toBe(401);
    expect(JSON.parse(old.text).error).toBe("invalid_api_key");
    // The new key is a different caller: its first use of the same idempotency key is charged.
    expect((await signals("?symbols=BTC&tf=1h", newKey, "kept")).headers.get("idempotent-replayed")).toBeNull();
    expect(await charges(accountId)).toBe(2);
  });

  it("answers 400 bad_request for an unusable Idempotency-Key, after the key checks", async () => {
    const { accountId, apiKey } = await server.account();
    const long = await signals("?symbols=BTC", apiKey, "x".repeat(256));
    expect(long.status).toBe(400);
    expect(JSON.parse(long.text).error).toBe("bad_request");
    const noKey = await fetch(`${server.baseUrl}/api/v1/signals`, { headers: { "idempotency-key": "x".repeat(300) } });
    expect(noKey.status).toBe(401);
    expect(await charges(accountId)).toBe(0);
  });
});

describe("Idempotency-Key over gRPC", () => {
  it("is read from metadata, replays the same message and charges once", async () => {
    const { accountId, apiKey } = await server.account();
    const client = createClient(SignalsService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const headers = { "x-api-key": apiKey, "idempotency-key": "grpc-1" };
    const first = await client.getSignals({ symbols: "BTC,SOL", tf: "1h" }, { headers });
    let replayed: string | null = null;
    const second = await client.getSignals(
      { symbols: "BTC,SOL", tf: "1h" },
      { headers, onHeader: (h) => (replayed = h.get("idempotent-replayed")) },
    );
    expect(second).toEqual(first);
    expect(replayed).toBe("true");
    expect(await charges(accountId)).toBe(1);
    const err = await client.getSignals({ symbols: "ETH", tf: "1h" }, { headers }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
  });
});
