/**
 * WORKERS=2: one `npm start` process as the primary of two server workers on one port
 * (server/cluster.ts), over Postgres. Both workers answer calls on the public port (read from
 * the kernel's socket table, not from anything the server says); candles pushed to the
 * internal listener (the lead, the one engine writer) are answered by the follower too;
 * alerts are sent exactly once, all by the lead; a member's chart page views meet one budget
 * whichever worker answers them (counted in the database); a worker killed with SIGKILL under load is
 * restarted by the primary without a wrong charge; SIGTERM drains them all. On the embedded
 * database WORKERS=2 is refused as a configuration error.
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { httpGet, Tally } from "../support/http-load.ts";
import { type CoinCandle, pushClosedCandles } from "../support/ingest-push.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { childEnv, runServerToExit, type ServerProcess, startServerProcess } from "../support/processes.ts";
import { awayFromMytMidnight, waitFor } from "../support/reliability.ts";
import { connectionOwners } from "../support/socket-owners.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";
import { WebClient } from "../support/web-client.ts";

const H = 3_600_000;
const INTERNAL_TOKEN = "workers-test-internal-token-07";
const CHAT = "7001";
const COINS = ["WA", "WB", "WC"];
/** The account's chart views per MYT day (the per-minute budget stays at its default of 20). */
const PAGE_VIEWS_PER_DAY = 5;

const bearer: Interceptor = (next) => (req) => {
  req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
  return next(req);
};

/** A process's environment as it started (Linux /proc). */
const environmentOf = (pid: number) =>
  new Map(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)] as const),
  );

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("WORKERS on the embedded database", () => {
  it("WORKERS=2 without DATABASE_URL is a configuration error (exit 2) that says why", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "signals-workers-"));
    try {
      const exit = await runServerToExit(childEnv({ DATA_DIR: dataDir, WORKERS: "2", PORT: "0", INTERNAL_PORT: "0" }));
      expect(exit.code).toBe(2);
      expect(exit.stderr).toBe(
        "signals: configuration error: WORKERS above 1 needs DATABASE_URL: " +
          "the embedded database (PGlite) is opened by one process only\n",
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe.runIf(usingPostgres)("WORKERS=2 on Postgres: two worker processes on one port", () => {
  let telegram: FakeTelegram;
  let database: { url: string; drop: () => Promise<void> };
  let server: ServerProcess;
  let admin: Client<typeof AdminService>;
  let db: DbHandle;
  let account: { accountId: number; apiKey: string };
  const breakerOpen = Math.floor(Date.now() / H) * H - H;
  const { history, breaker } = structureBreak(breakerOpen - 60 * H);

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    database = await createPostgresDatabase();
    server = await startServerProcess(
      childEnv({
        DATABASE_URL: database.url,
        WORKERS: "2",
        PORT: "0",
        INTERNAL_PORT: "0",
        INTERNAL_TOKEN,
        DEMO_ACCOUNT: "false",
        DEMO_FEED: "false",
        LOG_LEVEL: "info",
        DB_POOL_SIZE: "4",
        FAILED_KEY_LIMIT: "1000000",
        DAILY_CAP: "10000000",
        MONTHLY_GRANT: "100000000",
        STALE_AFTER: "86400",
        TELEGRAM_API_BASE: telegram.apiBase,
        TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        ALERT_MAX_DELAY: "7200",
        ALERT_RETRY_BASE_MS: "100",
        PAGE_VIEWS_PER_DAY: String(PAGE_VIEWS_PER_DAY),
      }),
      90_000,
    );
    admin = createClient(
      AdminService,
      createConnectTransport({ baseUrl: server.internalUrl, httpVersion: "1.1", interceptors: [bearer] }),
    );
    db = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 2 });
    const created = await admin.createAccount({ email: "workers@example.test", plan: "node" });
    account = { accountId: Number(created.account!.accountId), apiKey: created.apiKey };
  }, 120_000);

  afterAll(async () => {
    await server?.kill();
    await db?.close();
    await telegram?.close();
    await database?.drop();
  });

  /** Streams candles to the internal listener's IngestService over gRPC, as a feeder does. */
  async function push(mode: "live" | "backfill", updates: CoinCandle[]): Promise<void> {
    expect(await pushClosedCandles(server.internalUrl, INTERNAL_TOKEN, mode, "1h", updates)).toBe(
      BigInt(updates.length),
    );
  }

  it(
    "the primary forks two workers; calls on one port are answered by " +
      "both, and the follower answers the candles the lead was pushed",
    async () => {
      expect(server.workerPids).toHaveLength(2);
      expect(new Set([server.pid, ...server.workerPids]).size).toBe(3);
      // glibc's malloc arena limit is in each worker's own environment (it is read when a
      // process starts), not in the primary's (server/cluster.ts).
      for (const pid of server.workerPids) expect(environmentOf(pid).get("MALLOC_ARENA_MAX")).toBe("2");
      expect(environmentOf(server.pid).has("MALLOC_ARENA_MAX")).toBe(false);
      await admin.setAlerts({
        accountId: BigInt(account.accountId),
        alerts: { chatId: CHAT, symbols: COINS, timeframes: ["1h"] },
      });
      await push(
        "backfill",
        COINS.flatMap((symbol) => history.map((candle) => ({ symbol, candle }))),
      );

      const call = (agent: http.Agent) =>
        httpGet(
          `${server.baseUrl}/api/v1/signals?symbols=${COINS.join(",")}&tf=1h`,
          { "x-api-key": account.apiKey },
          agent,
          20_000,
        );
      const allOk = (body: string) =>
        (JSON.parse(body) as { signals: Array<{ ok: boolean }> }).signals.every((s) => s.ok);
      // Rounds of 24 new connections until both workers hold some: the workers take connections
      // from the kernel's queue as they are free (SCHED_NONE), so one round may go to one worker.
      const seen = new Map<number, number>();
      for (let round = 0; round < 20 && seen.size < 2; round++) {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 24 });
        try {
          // Every answer, whichever worker gave it, reads the pushed coins (the follower reloads
          // them on the lead's market_updated notification).
          const answers = await waitFor(
            async () => {
              const got = await Promise.all(Array.from({ length: 24 }, () => call(agent)));
              return got.every((a) => a.status === 200 && allOk(a.body)) ? got : null;
            },
            15_000,
            "every worker to answer the pushed coins",
          );
          expect(answers).toHaveLength(24);
          for (const pid of (await connectionOwners(server.port, server.workerPids)).values())
            seen.set(pid, (seen.get(pid) ?? 0) + 1);
        } finally {
          agent.destroy();
        }
      }
      console.log(`[workers figures] connections held per worker: ${JSON.stringify(Object.fromEntries(seen))}`);
      expect(new Set(seen.keys())).toEqual(new Set(server.workerPids));
    },
  );

  it("alerts are sent exactly once, all by the lead's outbox worker", async () => {
    await push(
      "live",
      COINS.map((symbol) => ({ symbol, candle: breaker })),
    );
    await telegram.waitForDelivered(COINS.length, EVENT_WAIT_MS);
    // Time for a second delivery worker (if there were one) to send anything again.
    await sleep(3_000);
    expect(telegram.received.map((m) => m.eventId).sort()).toEqual(
      COINS.map((symbol) => `${symbol}-1h-${breakerOpen}`).sort(),
    );
    // The lead's own counter (its internal /metrics) accounts for every message.
    const metrics = await (
      await fetch(`${server.internalUrl}/metrics`, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })
    ).text();
    expect(metrics).toMatch(new RegExp(`^signals_alert_deliveries\\{result="sent"\\} ${COINS.length}$`, "m"));
  });

  it(
    "each worker runs its memory-reducing GC once, after its start-up load and before the " +
      "primary's listening, and never again under traffic",
    async () => {
      // By now both workers have answered calls on many connections, imported a backfill and
      // applied live candles (the tests above), so a GC from load or a timer would show here.
      const logs = server.logs();
      const gcs = logs.filter((l) => l.msg === "start-up memory-reducing GC");
      expect(gcs.map((l) => Number(l.pid)).sort()).toEqual([...server.workerPids].sort());
      const listening = logs.findIndex((l) => l.msg === "listening");
      for (const role of ["lead", "follower"]) {
        const gc = logs.findIndex((l) => l.msg === "start-up memory-reducing GC" && l.role === role);
        const up = logs.findIndex((l) => l.msg === "worker listening" && l.role === role);
        // "worker listening" is logged once server.start() has loaded the market (and, in the
        // lead, the event chain); the primary's "listening" once every worker reported ready.
        expect(up).toBeGreaterThanOrEqual(0);
        expect(gc).toBeGreaterThan(up);
        expect(gc).toBeLessThan(listening);
      }
      for (const gc of gcs) {
        expect(gc.pauseMs).toBeGreaterThan(0);
        expect(gc.rssAfterMiB).toBeGreaterThan(0);
        expect(gc.heapUsedAfterMiB).toBeLessThanOrEqual(Number(gc.heapUsedBeforeMiB));
      }
    },
  );

  it("chart page views are counted in the database: the account's day budget holds across both workers", async () => {
    await awayFromMytMidnight(60_000);
    const password = "a long password for the workers test";
    await admin.setPassword({ accountId: BigInt(account.accountId), password });
    const web = new WebClient(server.baseUrl);
    expect((await web.signIn("workers@example.test", password)).status).toBe(303);
    const cookie = `sid=${web.cookies.get("sid")}`;
    // Rounds of 12 simultaneous views on new connections until both workers have served some.
    const statuses: number[] = [];
    const seen = new Set<number>();
    for (let round = 0; round < 10 && seen.size < 2; round++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 12 });
      try {
        const answers = await Promise.all(
          Array.from({ length: 12 }, () => httpGet(`${server.baseUrl}/charts/WA?tf=1h`, { cookie }, agent, 20_000)),
        );
        statuses.push(...answers.map((a) => a.status));
        for (const pid of (await connectionOwners(server.port, server.workerPids)).values()) seen.add(pid);
      } finally {
        agent.destroy();
      }
    }
    expect(seen).toEqual(new Set(server.workerPids));
    expect(statuses.filter((st) => st === 200)).toHaveLength(PAGE_VIEWS_PER_DAY);
    expect(statuses.filter((st) => st === 429)).toHaveLength(statuses.length - PAGE_VIEWS_PER_DAY);
  });

  it(
    "kill -9 of the follower, then of the lead, under load: each is restarted, " +
      "every 200 is charged once, no charge without a call that reached a worker",
    async () => {
      const before = (await ledgerCheck(db, account.accountId)).charges;
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      const tally = new Tally();
      let cutOff = 0;
      let stop = false;
      const loops = Array.from({ length: 16 }, async () => {
        while (!stop) {
          try {
            tally.add(
              String(
                (
                  await httpGet(
                    `${server.baseUrl}/api/v1/signals?symbols=WA`,
                    { "x-api-key": account.apiKey },
                    agent,
                    20_000,
                  )
                ).status,
              ),
            );
          } catch (err) {
            if (/ECONNREFUSED/.test(String(err))) tally.add("refused");
            else cutOff++;
            await sleep(20);
          }
        }
      });
      const restarted = () => server.logs().filter((l) => l.msg === "worker restarted");
      const [leadPid, followerPid] = server.workerPids as [number, number];
      for (const [n, pid] of [
        [1, followerPid],
        [2, leadPid],
      ] as const) {
        await sleep(1_000);
        process.kill(pid, "SIGKILL");
        await waitFor(
          () => restarted().length === n,
          EVENT_WAIT_MS,
          () => `restart ${n}; logs: ${JSON.stringify(server.logs().slice(-5))}`,
        );
      }
      await sleep(1_000);
      stop = true;
      await Promise.all(loops);
      agent.destroy();

      const check = await ledgerCheck(db, account.accountId);
      const charges = check.charges - before;
      const ok = tally.get("200");
      const figures = { answers: tally.toObject(), cutOff, charges, restarts: restarted().map((l) => l.pid) };
      console.log(`[workers figures] kill -9: ${JSON.stringify(figures)}`);
      // The surviving worker answers everything while the other restarts: only 200s.
      expect(Object.keys(tally.toObject())).toEqual(["200"]);
      expect(ok).toBeGreaterThan(0);
      expect(charges).toBeGreaterThanOrEqual(ok);
      expect(charges).toBeLessThanOrEqual(ok + cutOff);
      expect(ledgerBalances(check)).toBe(true);
      // Both replacements are new processes; the lead came back on the same internal port.
      const newPids = restarted().map((l) => Number(l.pid));
      expect(newPids.every((pid) => alive(pid) && !server.workerPids.includes(pid))).toBe(true);
      // Each replacement is a new process with its own start-up: one GC each, before its traffic.
      const startupGcs = server.logs().filter((l) => l.msg === "start-up memory-reducing GC");
      for (const pid of [...server.workerPids, ...newPids])
        expect(startupGcs.filter((l) => Number(l.pid) === pid)).toHaveLength(1);
      expect((await admin.getAccount({ accountId: BigInt(account.accountId) })).account?.accountId).toBe(
        BigInt(account.accountId),
      );
    },
  );

  it("SIGTERM to the primary drains every worker and exits 0", async () => {
    const workers = server
      .logs()
      .filter((l) => l.msg === "worker restarted")
      .map((l) => Number(l.pid));
    expect(workers).toHaveLength(2);
    expect(await server.stop()).toBe(0);
    expect(workers.filter(alive)).toEqual([]);
    expect(server.logs().filter((l) => (l.level as number) >= 50)).toEqual([]);
  });
});
