/**
 * Two server processes on one Postgres database, as in production behind a load balancer:
 * no process may serve from a stale view of keys or subscriptions, and the check-and-charge
 * stays exact when calls for one account arrive at both processes at once.
 */

import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import { apiRequest } from "../support/api-request.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { childEnv, type ServerProcess, startServerProcess } from "../support/processes.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";

const INTERNAL_TOKEN = "multi-process-internal-token-42";

const callRest = (server: ServerProcess, apiKey: string) =>
  apiRequest(server.baseUrl, "/api/v1/signals?symbols=BTC,ETH&tf=1h", { key: apiKey });

function adminClient(server: ServerProcess, token: string | null): Client<typeof AdminService> {
  const interceptors: Interceptor[] =
    token === null
      ? []
      : [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${token}`);
            return next(req);
          },
        ];
  return createClient(
    AdminService,
    createConnectTransport({ baseUrl: server.internalUrl, httpVersion: "1.1", interceptors }),
  );
}

let emailCounter = 0;

// PGlite is single-process (one process owns an embedded data directory, and a second server
// refuses to start on it), so several server processes on one database exist only on Postgres.
describe.runIf(usingPostgres)("two server processes on one Postgres database", () => {
  let drop: (() => Promise<void>) | null = null;
  let db: DbHandle | null = null;
  const started: ServerProcess[] = [];
  let a: ServerProcess;
  let b: ServerProcess;
  let adminA: Client<typeof AdminService>;

  const newAccount = async () => {
    const { account, apiKey } = await adminA.createAccount({
      email: `multi${++emailCounter}@example.test`,
      plan: "node",
    });
    return { accountId: account!.accountId, apiKey };
  };

  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    const env = childEnv({
      DATABASE_URL: database.url,
      PORT: "0",
      INTERNAL_PORT: "0",
      INTERNAL_TOKEN,
      DEMO_ACCOUNT: "false",
      LOG_LEVEL: "info",
    });
    // Started together on an empty database, as replicas of a deployment are.
    const results = await Promise.allSettled([startServerProcess(env), startServerProcess(env)]);
    for (const r of results) if (r.status === "fulfilled") started.push(r.value);
    for (const r of results) if (r.status === "rejected") throw r.reason;
    [a, b] = started as [ServerProcess, ServerProcess];
    adminA = adminClient(a, INTERNAL_TOKEN);
    db = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 2 });
  });

  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    await db?.close();
    await drop?.();
  });

  it("runs two distinct processes on distinct ports", () => {
    expect(a.pid).not.toBe(b.pid);
    expect(new Set([a.port, a.internalPort, b.port, b.internalPort]).size).toBe(4);
  });

  it("refuses a key regenerated on A at B's very next call, and accepts the new key on B", async () => {
    const { accountId, apiKey } = await newAccount();
    expect(await callRest(b, apiKey)).toMatchObject({ status: 200, body: { ok: true, credits_left: 9_999 } });

    const { apiKey: newKey } = await adminA.regenerateKey({ accountId });
    expect(newKey).not.toBe(apiKey);
    expect(await callRest(b, apiKey)).toMatchObject({ status: 401, body: { ok: false, error: "invalid_api_key" } });
    expect(await callRest(a, apiKey)).toMatchObject({ status: 401, body: { ok: false, error: "invalid_api_key" } });
    expect(await callRest(b, newKey)).toMatchObject({ status: 200, body: { ok: true, credits_left: 9_998 } });
  });

  it("applies a subscription end set on A at B at once, and a renewal on A just as fast", async () => {
    const { accountId, apiKey } = await newAccount();
    expect(await callRest(b, apiKey)).toMatchObject({ status: 200 });

    await adminA.setSubscription({ accountId, until: new Date(Date.now() - 1000).toISOString() });
    expect(await callRest(b, apiKey)).toMatchObject({
      status: 403,
      body: { ok: false, error: "subscription_inactive" },
    });

    await adminA.setSubscription({ accountId, until: new Date(Date.now() + 30 * 86_400_000).toISOString() });
    expect(await callRest(b, apiKey)).toMatchObject({ status: 200, body: { ok: true, credits_left: 9_998 } });
  });

  it("charges exactly the balance when 300 calls for 100 Tokens arrive at both processes at once", async () => {
    const { accountId, apiKey } = await newAccount();
    const drained = await adminA.adjustTokens({ accountId, delta: -9_900n, reason: "test: leave exactly 100" });
    expect(drained.account?.creditsLeft).toBe(100n);

    const results = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const server = i % 2 === 0 ? a : b;
        return { server: server === a ? "A" : "B", ...(await callRest(server, apiKey)) };
      }),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect({ ok: ok.length, refused: refused.length, other: results.length - ok.length - refused.length }).toEqual({
      ok: 100,
      refused: 200,
      other: 0,
    });
    // Each charged call saw its own balance: no Token counted twice, none lost.
    expect(ok.map((r) => r.body.credits_left as number).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
    expect(new Set(refused.map((r) => r.body.error))).toEqual(new Set(["insufficient_credits"]));
    // Both processes charged.
    expect(new Set(ok.map((r) => r.server))).toEqual(new Set(["A", "B"]));

    const { account } = await adminClient(b, INTERNAL_TOKEN).getAccount({ accountId });
    expect({ credits: account?.creditsLeft, calls: account?.callsToday }).toEqual({ credits: 0n, calls: 100n });
    const check = await ledgerCheck(db!, Number(accountId));
    expect(ledgerBalances(check)).toBe(true);
    expect({ charges: check.charges, grant: check.grantBalance, pack: check.packBalance }).toEqual({
      charges: 100,
      grant: 0,
      pack: 0,
    });
  });

  it("refuses AdminService calls on the internal listener without the bearer token", async () => {
    for (const server of [a, b]) {
      for (const token of [null, "wrong-token-but-long-enough"]) {
        const err = await adminClient(server, token)
          .createAccount({ email: `intruder${++emailCounter}@example.test`, plan: "node" })
          .then(
            () => null,
            (e: unknown) => ConnectError.from(e),
          );
        expect(err, `token ${token}`).not.toBeNull();
        expect(err!.code).toBe(Code.Unauthenticated);
        expect(err!.findDetails(ErrorInfoSchema)[0]?.reason).toBe("unauthorized");
      }
    }
    const rows = await db!.rows<{ n: string | number }>(
      sql`SELECT count(*) AS n FROM accounts WHERE email LIKE 'intruder%'`,
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it("does not serve AdminService on the public listener, even with the bearer token", async () => {
    const publicAdmin = createClient(
      AdminService,
      createConnectTransport({
        baseUrl: a.baseUrl,
        httpVersion: "1.1",
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
            return next(req);
          },
        ],
      }),
    );
    const err = await publicAdmin.getAccount({ accountId: 1n }).then(
      () => null,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err).not.toBeNull();
    expect([Code.NotFound, Code.Unimplemented]).toContain(err!.code);
  });
});
