/**
 * A transaction whose host goes silent in the middle (a partition that drops packets, a host
 * that froze) does not hold its row locks for as long as the database's kernel keeps the dead
 * socket: PostgreSQL ends the session after DB_IDLE_IN_TRANSACTION_MS, which every connection
 * of ours sends at startup (src/db/client.ts). Without it a member's balance row stayed locked
 * ~100 s after a host was cut off (multi-host test); behind the silent proxy here, for ever.
 * Also: the pool's sockets probe an idle connection with TCP keepalive after 15 s.
 */
import { execFileSync } from "node:child_process";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

/** The setting under test: short, yet long enough that the lock is seen held before it ends. */
const IDLE_IN_TRANSACTION_MS = 3_000;

/**
 * How long the test waits for the backend to end. Its timer is PostgreSQL's own, which a busy
 * machine delays little; without the setting the backend stays as long as its socket (here, for
 * ever), so any bound far past the setting tells the two apart.
 */
const ENDED_WITHIN_MS = 10 * IDLE_IN_TRANSACTION_MS;

const hasSs = (() => {
  try {
    execFileSync("ss", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!usingPostgres)("a transaction whose host went silent (PostgreSQL)", () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let admin: postgres.Sql;
  let proxy: TcpProxy;
  let handle: DbHandle;
  const applicationName = `idle_in_tx_${process.pid}`;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    admin = postgres(database.url, { max: 1, onnotice: () => {} });
    await admin`CREATE TABLE balances (id int PRIMARY KEY, tokens int NOT NULL)`;
    await admin`INSERT INTO balances VALUES (1, 100)`;
    proxy = await startTcpProxy("127.0.0.1", Number(new URL(database.url).port || 5432));
    const url = new URL(proxy.urlFor(database.url));
    url.searchParams.set("application_name", applicationName);
    handle = await openDb({
      databaseUrl: url.toString(),
      dataDir: "",
      poolSize: 2,
      idleInTransactionMs: IDLE_IN_TRANSACTION_MS,
    });
  });

  afterAll(async () => {
    await handle?.close();
    await proxy?.close();
    await admin?.end({ timeout: 1 });
    await database?.drop();
  });

  it(
    "is ended by PostgreSQL after DB_IDLE_IN_TRANSACTION_MS, its row lock released",
    async () => {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const lockTaken = new Promise<void>((r) => (locked = r));
      // Taken before the transaction begins: the backend's idle time starts after its lock
      // statement is answered, so the lower bound below holds however slow the client is.
      const sentAt = Date.now();
      const transaction = handle.db
        .transaction(async (tx) => {
          await tx.execute(sql`SELECT tokens FROM balances WHERE id = 1 FOR UPDATE`);
          locked();
          await released;
        })
        .then(
          () => "committed",
          (err: Error) => `failed: ${err.message}`,
        );
      await lockTaken;
      const lockedAt = Date.now();
      await expect(admin`SELECT id FROM balances WHERE id = 1 FOR UPDATE NOWAIT`).rejects.toThrow(
        /could not obtain lock/,
      );
      expect(proxy.silenceAll()).toBeGreaterThan(0);

      // Waits for the event: our backend gone from pg_stat_activity.
      let remaining = 1;
      while (remaining > 0 && Date.now() - lockedAt < ENDED_WITHIN_MS) {
        const [row] = await admin<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE application_name = ${applicationName} AND state = 'idle in transaction'`;
        remaining = row!.n;
        if (remaining > 0) await new Promise((r) => setTimeout(r, 50));
      }
      const endedAfterMs = Date.now() - lockedAt;
      expect(remaining, `backend still idle in transaction ${endedAfterMs} ms after taking the lock`).toBe(0);
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(IDLE_IN_TRANSACTION_MS);
      // The lock went with it: another session takes the row at once.
      await admin.begin(async (tx) => {
        expect(await tx`SELECT tokens FROM balances WHERE id = 1 FOR UPDATE NOWAIT`).toEqual([{ tokens: 100 }]);
      });
      const [locks] = await admin<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
       WHERE a.application_name = ${applicationName} AND l.relation = 'balances'::regclass`;
      expect(locks!.n).toBe(0);

      // The link comes back as a reset (a silent partition's sockets end so, at the latest by
      // keepalive): the transaction fails, nothing committed, and the pool queries again.
      release();
      proxy.cutAll();
      expect(await transaction).toMatch(/^failed: /);
      expect(await handle.rows<{ n: number }>(sql`SELECT 1 AS n`)).toEqual([{ n: 1 }]);
    },
    EVENT_WAIT_MS,
  );

  it.skipIf(!hasSs)(
    `keeps TCP keepalive on the pool's sockets, first probe within 15 s of silence${
      hasSs ? "" : " (skipped: this machine has no `ss` command, iproute2, to read the sockets' timers)"
    }`,
    async () => {
      await handle.rows(sql`SELECT 1`);
      // Our sockets are those connected to the proxy; `ss -o` prints their keepalive timer.
      const lines = execFileSync("ss", ["-tnoH", "state", "established", "dport", `= :${proxy.port}`], {
        encoding: "utf8",
      })
        .split("\n")
        .filter((line) => line.trim() !== "");
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        const timer = /timer:\(keepalive,(?:(\d+)min)?(?:(\d+(?:\.\d+)?)sec)?(?:(\d+)ms)?,\d+\)/.exec(line);
        expect(timer, line).not.toBeNull();
        const seconds = Number(timer![1] ?? 0) * 60 + Number(timer![2] ?? 0) + Number(timer![3] ?? 0) / 1000;
        expect(seconds, line).toBeLessThanOrEqual(15);
      }
    },
  );
});
