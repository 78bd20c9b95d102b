/**
 * "Last used" through the real server: with a window longer than the test, twenty accepted
 * calls (paid and free) write nothing at all, refused ones are never noted, and stopping the
 * server writes the newest time in one statement.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRequest } from "../support/api-request.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

describe("API key last used, written in batches", () => {
  let db: TestDb;
  let server: TestServer;
  let apiKey: string;
  let accountId: number;

  const lastUsed = async (): Promise<number | null> => {
    const [row] = await db.handle.rows<{ at: number | string | null }>(
      sql`SELECT floor(extract(epoch FROM last_used_at) * 1000)::float8 AS at FROM api_keys
        WHERE account_id = ${accountId} AND revoked_at IS NULL`,
    );
    return row!.at === null ? null : Number(row!.at);
  };
  const statusOf = async (path: string, key = apiKey) => (await apiRequest(server.baseUrl, path, { key })).status;

  beforeAll(async () => {
    db = await createTestDb();
    server = await startTestServer({ db, env: { KEY_LAST_USED_FLUSH_MS: "3600000" } });
    ({ apiKey, accountId } = await server.account());
  });

  afterAll(async () => {
    await db?.drop();
  });

  it("writes nothing while calls come in, and the newest time when the server stops", async () => {
    const statementsBefore = await db.handle.rows<{ n: string | number }>(
      sql`SELECT count(*) AS n FROM api_keys WHERE last_used_at IS NOT NULL`,
    );
    expect(Number(statementsBefore[0]!.n)).toBe(0);
    for (let i = 0; i < 10; i++) expect(await statusOf("/api/v1/signals?symbols=BTC&tf=4h")).toBe(200);
    server.clock.advance(90_000);
    for (let i = 0; i < 10; i++) expect(await statusOf("/api/v1/usage")).toBe(200);
    // A refused call (another account's plan cannot call) is not a use of that key.
    const free = await server.account({ plan: "free" });
    expect(await statusOf("/api/v1/signals?symbols=BTC&tf=4h", free.apiKey)).toBe(403);
    expect(await lastUsed()).toBeNull();
    const metrics = await (
      await fetch(`${server.internalUrl}/metrics`, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })
    ).text();
    expect(metrics).toMatch(/^signals_api_key_last_used_flushes_total 0$/m);
    const newest = server.clock();
    await server.close();
    expect(await lastUsed()).toBe(newest);
    const [freeKey] = await db.handle.rows<{ at: unknown }>(
      sql`SELECT last_used_at AS at FROM api_keys WHERE account_id = ${free.accountId}`,
    );
    expect(freeKey!.at).toBeNull();
  });
});
