/**
 * Keys a scanner can verify offline, against a real server: a random key of the current shape
 * with a bad checksum is refused 401 invalid_api_key on every keyed route and protocol WITHOUT
 * a key lookup (a counter wraps every statement the server's database handle runs, except the
 * failed-key budget's count, which names only the caller's address); a key
 * with a valid checksum but unknown does reach the database (the counter works); a key issued
 * before checksums keeps working until it is regenerated.
 */

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { UsageService } from "../../gen/signals/v1/usage_pb.js";
import { regenerateKey } from "../../src/accounts/accounts.ts";
import { generateApiKey, hashApiKey, hasValidChecksum, isLegacyApiKey } from "../../src/accounts/api-key.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let db: TestDb;
let server: TestServer;
let queries = 0;

beforeAll(async () => {
  db = await createTestDb();
  // Every statement of the server goes through these two methods (charge, free_call, usage).
  const handle = db.handle as { prepared: TestDb["handle"]["prepared"]; rows: TestDb["handle"]["rows"] };
  const prepared = handle.prepared.bind(handle);
  const rows = handle.rows.bind(handle);
  // The failed-key budget's count (issue 23, item 6) is not a key lookup: it names the caller's
  // address, never the key, so it is left out of the count.
  handle.prepared = ((text: string, params: unknown[]) => {
    if (!text.includes("failed_key_windows")) queries++;
    return prepared(text, params);
  }) as typeof handle.prepared;
  handle.rows = ((query: never) => {
    queries++;
    return rows(query);
  }) as typeof handle.rows;
  server = await startTestServer({ db, env: { FAILED_KEY_LIMIT: "100000" } });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

/** A key of the current shape whose checksum is wrong. */
function badChecksumKey(): string {
  const key = generateApiKey();
  const last = key.at(-1) === "0" ? "1" : "0";
  const bad = key.slice(0, -1) + last;
  expect(hasValidChecksum(bad)).toBe(false);
  return bad;
}

async function rest(path: string, key: string) {
  const res = await fetch(`${server.baseUrl}${path}`, { headers: { "x-api-key": key } });
  return { status: res.status, body: (await res.json()) as { error?: string } };
}

describe("checksum keys", () => {
  it(
    "a random key of the right shape with a bad checksum: 401 invalid_api_key " +
      "with no database query, on REST, Connect and gRPC",
    async () => {
      const grpc = createGrpcTransport({ baseUrl: server.baseUrl });
      const signals = createClient(SignalsService, grpc);
      const usage = createClient(UsageService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }));
      await rest("/api/v1/usage", generateApiKey()); // any lazy start-up work happens now
      const before = queries;
      for (let i = 0; i < 30; i++) {
        for (const path of ["/api/v1/signals?symbols=BTC", "/api/v1/usage", "/api/v1/news", "/api/v1/movers"]) {
          const r = await rest(path, badChecksumKey());
          expect({ status: r.status, error: r.body.error }).toEqual({ status: 401, error: "invalid_api_key" });
        }
        // GetSignals over gRPC, GetUsage over Connect (HTTP/1.1).
        for (const call of [
          () => signals.getSignals({ symbols: "BTC" }, { headers: { "x-api-key": badChecksumKey() } }),
          () => usage.getUsage({}, { headers: { "x-api-key": badChecksumKey() } }),
        ]) {
          const err = await call().then(
            () => null,
            (e: unknown) => ConnectError.from(e),
          );
          expect(err?.code).toBe(Code.Unauthenticated);
          expect(err?.metadata.get("x-error-code")).toBe("invalid_api_key");
        }
      }
      expect(queries - before).toBe(0);
    },
  );

  it("a key with a valid checksum that is not ours reaches the database (the counter counts)", async () => {
    const before = queries;
    const r = await rest("/api/v1/signals", generateApiKey());
    expect(r).toMatchObject({ status: 401, body: { error: "invalid_api_key" } });
    expect(queries - before).toBeGreaterThan(0);
  });

  it("a key issued before checksums keeps working (paid and usage) until it is regenerated", async () => {
    const { accountId } = await server.account();
    const legacy = `sig_live_${"Lg7".repeat(10)}Q9`;
    expect(isLegacyApiKey(legacy)).toBe(true);
    // As an account from before the change has it: the hash of a 41-character key.
    await db.handle.rows(
      sql`UPDATE api_keys SET key_hash = ${hashApiKey(legacy)}, display_prefix = ${legacy.slice(0, 13)}
        WHERE account_id = ${accountId} AND revoked_at IS NULL`,
    );
    expect((await rest("/api/v1/signals", legacy)).status).toBe(200);
    expect((await rest("/api/v1/usage", legacy)).status).toBe(200);
    const { apiKey } = await regenerateKey(db.handle, accountId, server.clock());
    expect(hasValidChecksum(apiKey)).toBe(true);
    expect((await rest("/api/v1/signals", legacy)).body.error).toBe("invalid_api_key");
    expect((await rest("/api/v1/signals", apiKey)).status).toBe(200);
  });
});
