/**
 * "Answered ⇒ charged, charged ⇒ answered or refunded": a REST caller that closes its connection
 * while its charge waits for its turn (the grouped charge batcher, src/billing/charge.ts) is
 * never charged. The wait is made certain, not raced: the server has one charge slot
 * (DB_POOL_SIZE 3), and another member's charge holds it, blocked on a row lock the test takes.
 * Only once the server has logged the gone caller's request as aborted is the lock released.
 */
import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import { PassThrough } from "node:stream";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixedSnapshot, SAMPLE_READINGS } from "../support/fixed-snapshot.ts";
import { type LedgerCheck, ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { waitFor } from "../support/reliability.ts";
import { usingPostgres } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

/** The charger's default wait for a statement slot (createChargeBatcher's queueTimeoutMs). */
const QUEUE_DEADLINE_MS = 5_000;

describe.skipIf(!usingPostgres)("a REST caller gone before its charge was sent (PostgreSQL)", () => {
  let server: TestServer;
  let admin: postgres.Sql;
  const logLines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const logs = new PassThrough();
    let partial = "";
    logs.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop()!;
      for (const line of lines) if (line.trim() !== "") logLines.push(JSON.parse(line) as Record<string, unknown>);
    });
    server = await startTestServer({
      snapshot: fixedSnapshot(SAMPLE_READINGS),
      env: { DB_POOL_SIZE: "3", LOG_LEVEL: "info" },
      logs,
    });
    admin = postgres(server.db.url!, { max: 1, onnotice: () => {} });
  });

  afterAll(async () => {
    await admin?.end({ timeout: 1 });
    await server?.close();
  });

  const chargesInFlight = async () => {
    const text = await (await fetch(`${server.internalUrl}/metrics`)).text();
    return Number(/^signals_charges_in_flight (\d+)/m.exec(text)?.[1]);
  };

  it("finds no charge for it, and the ledger sums", async () => {
    expect(server.config.dbPoolSize - 2).toBe(1); // one charge statement at a time
    const holder = await server.account();
    const leaver = await server.account();
    const before: LedgerCheck = await ledgerCheck(server.db.handle, leaver.accountId);

    // The holder's charge takes the only slot and waits on its account's row.
    let holderAnswer: Promise<number> | undefined;
    await admin.begin(async (tx) => {
      await tx`SELECT id FROM accounts WHERE id = ${holder.accountId} FOR UPDATE`;
      holderAnswer = new Promise<number>((resolve, reject) => {
        http
          .get(
            `${server.baseUrl}/api/v1/signals?symbols=BTC&tf=1h`,
            { headers: { "x-api-key": holder.apiKey } },
            (res) => {
              res.resume();
              resolve(res.statusCode!);
            },
          )
          .on("error", reject);
      });
      await waitFor(
        async () => {
          const [row] = await tx<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`;
          return row!.n > 0;
        },
        EVENT_WAIT_MS,
        "the holder's charge to wait on the row lock",
      );

      // The leaver's call reaches the charger and waits for the slot; then its caller leaves.
      const requestId = `caller-gone-${process.pid}`;
      // The charger's queue deadline (5 s, charge.ts) also refuses a queued group unsent: if the
      // lock were held past it, this test could pass without the caller-gone check, so the time
      // from the request to the lock's release is bounded below.
      const requestedAt = Date.now();
      const socket = net.connect(server.port, "127.0.0.1");
      await once(socket, "connect");
      socket.write(
        `GET /api/v1/signals?symbols=BTC&tf=1h HTTP/1.1\r\nHost: x\r\nx-api-key: ${leaver.apiKey}\r\n` +
          `x-request-id: ${requestId}\r\n\r\n`,
      );
      await waitFor(async () => (await chargesInFlight()) === 2, EVENT_WAIT_MS, "the leaver's charge to queue");
      socket.resetAndDestroy();
      const line = await waitFor(
        () => logLines.find((l) => l.reqId === requestId && l.msg === "request"),
        EVENT_WAIT_MS,
        "the server to see the leaver gone",
      );
      expect(line.aborted).toBe(true);
      const queuedForMs = Date.now() - requestedAt;
      expect(
        queuedForMs,
        "the lock outlived the queue deadline: that deadline may have refused the charge",
      ).toBeLessThan(QUEUE_DEADLINE_MS);
      // Leaving the callback commits the lock's transaction: the slot frees, the queue moves.
    });

    expect(await holderAnswer).toBe(200);
    await waitFor(async () => (await chargesInFlight()) === 0, EVENT_WAIT_MS, "every charge to settle");
    const holderLedger = await ledgerCheck(server.db.handle, holder.accountId);
    expect(holderLedger.charges).toBe(1);
    expect(ledgerBalances(holderLedger)).toBe(true);
    const after = await ledgerCheck(server.db.handle, leaver.accountId);
    expect(after.charges).toBe(0);
    expect(after).toEqual(before);
    expect(ledgerBalances(after)).toBe(true);
  });
});
