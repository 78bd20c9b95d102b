/**
 * Process faults: a server killed with SIGKILL under load and started again, and a SIGTERM
 * drain. After a crash, every 200 a client received has its ledger charge, no charge exists
 * without a call that reached the server (charges <= 200s + calls cut off without an answer),
 * and a call retried with its Idempotency-Key after the restart is not charged twice. SIGTERM
 * lets in-flight calls finish with their answers, refuses new connections, ends the internal
 * event streams with UNAVAILABLE, and exits 0 within the bound.
 */

import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import { httpGet, Tally } from "../support/http-load.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { childEnv, hasStackTrace } from "../support/processes.ts";
import {
  adminSql,
  FULL,
  killHard,
  listeningOf,
  lockAccountRow,
  spawnServer,
  timerLateness,
  type WatchedProcess,
  waitFor,
} from "../support/reliability.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const INTERNAL_TOKEN = "process-faults-internal-token";
const ENV = {
  MONTHLY_GRANT: "100000000",
  DAILY_CAP: "10000000",
  FAILED_KEY_LIMIT: "1000000",
  DB_POOL_SIZE: "4",
  DEMO_ACCOUNT: "false",
  LOG_LEVEL: "info",
  INTERNAL_TOKEN,
};
const figures: Record<string, unknown> = {};
afterAll(() => console.log(`[reliability figures] process-faults ${JSON.stringify(figures)}`));

interface Running {
  p: WatchedProcess;
  baseUrl: string;
  internalUrl: string;
}

async function start(env: NodeJS.ProcessEnv): Promise<Running> {
  const p = spawnServer(env);
  const { port, internalPort } = await listeningOf(p);
  return { p, baseUrl: `http://127.0.0.1:${port}`, internalUrl: `http://127.0.0.1:${internalPort}` };
}

const bearer: Interceptor = (next) => (req) => {
  req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
  return next(req);
};
const adminOf = (r: Running) =>
  createClient(
    AdminService,
    createConnectTransport({ baseUrl: r.internalUrl, httpVersion: "1.1", interceptors: [bearer] }),
  );

/** Whether a failed request reached the server: refused connections never did. */
const reachedServer = (err: unknown) => !/ECONNREFUSED/.test(String((err as Error).message ?? err));

describe.runIf(usingPostgres)("kill -9 of a server under load, then a restart", () => {
  let drop: (() => Promise<void>) | null = null;
  let db: DbHandle;
  let env: NodeJS.ProcessEnv;
  const running: Running[] = [];

  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    env = childEnv({ ...ENV, DATABASE_URL: database.url, PORT: "0", INTERNAL_PORT: "0" });
    running.push(...(await Promise.all([start(env), start(env)])));
    db = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 2 });
  }, 120_000);
  afterAll(async () => {
    for (const r of running) {
      r.p.child.kill("SIGTERM");
      await Promise.race([r.p.exited, sleep(15_000)]);
      await killHard(r.p);
    }
    await db?.close();
    await drop?.();
  });

  it(
    "every 200 has its charge, no charge without a call that " + "reached a server, and idempotent retries charge once",
    async () => {
      const admin = adminOf(running[1]!);
      const plain = await admin.createAccount({ email: "plain@example.test", plan: "node" });
      const idem = await admin.createAccount({ email: "idem@example.test", plan: "node" });
      // targets[0] is the process that gets killed (and replaced); targets[1] lives on.
      const targets = [running[0]!, running[1]!];
      const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
      const tally = { plain: new Tally(), idem: new Tally() };
      let plainNoAnswer = 0;
      let plainRefused = 0;
      const idemAnswers = new Map<string, Set<string>>();
      let idemRetries = 0;
      let stop = false;

      const plainLoop = async (which: number) => {
        while (!stop) {
          try {
            const res = await httpGet(
              `${targets[which]!.baseUrl}/api/v1/signals?symbols=BTC`,
              { "x-api-key": plain.apiKey },
              agent,
              20_000,
            );
            tally.plain.add(String(res.status));
          } catch (err) {
            if (reachedServer(err)) plainNoAnswer++;
            else plainRefused++;
            await sleep(20);
          }
        }
      };
      let next = 0;
      const idemLoop = async (which: number) => {
        while (!stop) {
          const key = `job-${which}-${next++}`;
          const seen = new Set<string>();
          idemAnswers.set(key, seen);
          // Retried (on the other process too) until it gets its 200, as a careful client does.
          for (let attempt = 0; ; attempt++) {
            const target = targets[(which + attempt) % 2]!;
            try {
              const res = await httpGet(
                `${target.baseUrl}/api/v1/signals?symbols=ETH`,
                { "x-api-key": idem.apiKey, "idempotency-key": key },
                agent,
                20_000,
              );
              tally.idem.add(String(res.status));
              if (res.status === 200) {
                seen.add(res.body);
                // One more copy after the answer: must be the same answer, uncharged.
                if (attempt > 0 || Math.random() < 0.2)
                  seen.add(
                    (
                      await httpGet(
                        `${targets[1]!.baseUrl}/api/v1/signals?symbols=ETH`,
                        { "x-api-key": idem.apiKey, "idempotency-key": key },
                        agent,
                        20_000,
                      )
                    ).body,
                  );
                break;
              }
            } catch {
              tally.idem.add("no answer");
            }
            idemRetries++;
            await sleep(50);
          }
        }
      };
      const loops = [
        ...[0, 1].flatMap((w) => Array.from({ length: 8 }, () => plainLoop(w))),
        ...[0, 1].flatMap((w) => Array.from({ length: 4 }, () => idemLoop(w))),
      ];
      const kills = FULL ? 5 : 1;
      const restarts: number[] = [];
      // The load runs until every caller has had a few answers, before each kill and after the last.
      const answers = () => tally.plain.total() + tally.idem.total();
      const moreAnswers = (n: number) => {
        const from = answers();
        return waitFor(() => answers() >= from + n, EVENT_WAIT_MS, `${n} more answers`, 20);
      };
      for (let k = 0; k < kills; k++) {
        await moreAnswers(3 * loops.length);
        await killHard(targets[0]!.p);
        await sleep(300);
        const at = Date.now();
        const replacement = await start(env);
        restarts.push(Date.now() - at);
        running.push(replacement);
        targets[0] = replacement;
      }
      await moreAnswers(3 * loops.length);
      stop = true;
      await Promise.all(loops);
      agent.destroy();

      const plainCheck = await ledgerCheck(db, Number(plain.account!.accountId));
      const idemCheck = await ledgerCheck(db, Number(idem.account!.accountId));
      const plain200 = tally.plain.get("200");
      figures.kill9 = {
        kills,
        restartMs: restarts,
        plain: {
          answers: tally.plain.toObject(),
          cutOffWithoutAnswer: plainNoAnswer,
          refusedConnections: plainRefused,
          charges: plainCheck.charges,
        },
        idem: {
          keys: idemAnswers.size,
          answers: tally.idem.toObject(),
          retries: idemRetries,
          charges: idemCheck.charges,
        },
      };
      const errors = new Map<string, number>();
      for (const r of running)
        for (const l of r.p.logs)
          if ((l.level as number) >= 50)
            errors.set(`${l.msg} ${JSON.stringify(l.err)}`, (errors.get(`${l.msg} ${JSON.stringify(l.err)}`) ?? 0) + 1);
      figures.kill9Errors = Object.fromEntries(errors);
      // Only 200s (the survivor and the replacement answer everything they receive).
      expect(Object.keys(tally.plain.toObject())).toEqual(["200"]);
      expect(plainCheck.charges).toBeGreaterThanOrEqual(plain200);
      expect(plainCheck.charges).toBeLessThanOrEqual(plain200 + plainNoAnswer);
      expect(ledgerBalances(plainCheck)).toBe(true);
      // Every idempotent job got one answer, however often it was sent, and one charge.
      for (const [key, bodies] of idemAnswers) expect(bodies.size, key).toBe(1);
      expect(idemCheck.charges).toBe(idemAnswers.size);
      expect(ledgerBalances(idemCheck)).toBe(true);
      // The replacement serves.
      expect(
        (await fetch(`${targets[0]!.baseUrl}/api/v1/signals?symbols=BTC`, { headers: { "x-api-key": plain.apiKey } }))
          .status,
      ).toBe(200);
    },
  );
});

/** Opens a tailing SignalEventsService stream; resolves with how it ended. */
function tailEvents(internalUrl: string) {
  const sessions = new Http2SessionManager(internalUrl);
  const client = createClient(
    SignalEventsService,
    createGrpcTransport({ baseUrl: internalUrl, sessionManager: sessions, interceptors: [bearer] }),
  );
  const ended = (async () => {
    try {
      for await (const _ of client.streamSignalEvents({})) void _;
      return { code: "ended", reason: undefined as string | undefined };
    } catch (e) {
      const err = ConnectError.from(e);
      return { code: Code[err.code], reason: err.findDetails(ErrorInfoSchema)[0]?.reason };
    } finally {
      sessions.abort();
    }
  })();
  return ended;
}

function connectRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "ECONNREFUSED"));
  });
}

describe("SIGTERM drains", () => {
  it.runIf(usingPostgres)(
    "in-flight calls finish with their answers, new connections are " +
      "refused, event streams end UNAVAILABLE, exit 0 within 12 s",
    async () => {
      const database = await createPostgresDatabase();
      const env = childEnv({ ...ENV, DATABASE_URL: database.url, PORT: "0", INTERNAL_PORT: "0" });
      const server = await start(env);
      const admin = adminSql(database.url);
      const db = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 1 });
      try {
        const { account, apiKey } = await adminOf(server).createAccount({ email: "drain@example.test", plan: "node" });
        const accountId = Number(account!.accountId);
        const streams = [tailEvents(server.internalUrl), tailEvents(server.internalUrl)];
        // Calls that are in flight for sure: their charge waits on the account row, held here.
        const lock = await lockAccountRow(admin, accountId);
        const agent = new http.Agent({ keepAlive: true });
        const inFlight = Array.from({ length: 20 }, () =>
          httpGet(`${server.baseUrl}/api/v1/signals?symbols=BTC`, { "x-api-key": apiKey }, agent, 30_000).then(
            (a) => a.status,
            (e: Error) => e.message,
          ),
        );
        await waitFor(
          async () => {
            const [row] = await admin<
              { n: number }[]
            >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()
              AND wait_event_type = 'Lock'`;
            return row!.n > 0;
          },
          EVENT_WAIT_MS,
          "the calls to wait on the row lock",
        );
        // All 20 requests received and charging, not only the first charge statement: a request
        // still on its way at the signal is a new one, and the drain rightly drops it (seen on a
        // busy machine as ECONNRESET for the calls the server had not read yet).
        await waitFor(
          async () =>
            /^signals_charges_in_flight 20$/m.test(await (await fetch(`${server.internalUrl}/metrics`)).text()),
          EVENT_WAIT_MS,
          "the 20 calls charging at the server",
        );

        const port = Number(new URL(server.baseUrl).port);
        const internalPort = Number(new URL(server.internalUrl).port);
        const signalledAt = Date.now();
        const lateness = timerLateness();
        server.p.child.kill("SIGTERM");
        await waitFor(() => server.p.logs.some((l) => l.msg === "draining"), EVENT_WAIT_MS, "the draining line");
        // New connections are refused at once, on both listeners...
        expect(
          await waitFor(
            async () => (await connectRefused(port)) && (await connectRefused(internalPort)),
            3_000,
            "new connections refused",
          ),
        ).toBe(true);
        // ...and the internal event streams are told to reconnect elsewhere.
        const ends = await Promise.all(streams);
        expect(ends).toEqual([
          { code: "Unavailable", reason: "unavailable" },
          { code: "Unavailable", reason: "unavailable" },
        ]);
        // The in-flight calls are still waiting; let them through: each gets its answer.
        await sleep(500);
        await lock.release();
        const statuses = await Promise.all(inFlight);
        agent.destroy();
        const code = await Promise.race([server.p.exited, sleep(20_000).then(() => "still running")]);
        const exitMs = Date.now() - signalledAt;
        figures.sigtermInFlight = {
          inFlight: statuses.length,
          statuses: [...new Set(statuses)],
          exitCode: code,
          exitMs,
        };
        expect(statuses).toEqual(Array(20).fill(200));
        expect(code).toBe(0);
        // The 10 s grace and a margin, plus how late this machine runs timers now (measured since the signal).
        expect(exitMs).toBeLessThan(12_000 + 2 * lateness.maxMs());
        expect((await ledgerCheck(db, accountId)).charges).toBe(20);
        expect(hasStackTrace(server.p.stderr())).toBe(false);
      } finally {
        await killHard(server.p);
        await admin.end();
        await db.close();
        await database.drop();
      }
    },
  );

  it.runIf(usingPostgres)(
    "calls still stuck when the 10 s grace ends are cut " + "off, and the process still exits 0 within 12 s",
    async () => {
      const database = await createPostgresDatabase();
      const env = childEnv({ ...ENV, DATABASE_URL: database.url, PORT: "0", INTERNAL_PORT: "0" });
      const server = await start(env);
      const admin = adminSql(database.url);
      try {
        const { account, apiKey } = await adminOf(server).createAccount({ email: "stuck@example.test", plan: "node" });
        const accountId = Number(account!.accountId);
        const lock = await lockAccountRow(admin, accountId);
        const inFlight = Array.from({ length: 5 }, () =>
          httpGet(
            `${server.baseUrl}/api/v1/signals?symbols=BTC`,
            { "x-api-key": apiKey },
            new http.Agent(),
            30_000,
          ).then(
            (a) => a.status,
            (e: Error) => e.message,
          ),
        );
        await waitFor(
          async () => {
            const [row] = await admin<
              { n: number }[]
            >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()
              AND wait_event_type = 'Lock'`;
            return row!.n > 0;
          },
          EVENT_WAIT_MS,
          "the calls to wait on the row lock",
        );
        const signalledAt = Date.now();
        const lateness = timerLateness();
        server.p.child.kill("SIGTERM");
        const code = await Promise.race([server.p.exited, sleep(20_000).then(() => "still running")]);
        const exitMs = Date.now() - signalledAt;
        const outcomes = await Promise.all(inFlight);
        await lock.release();
        // The statements of the cut-off calls were still waiting in the database; they may now
        // commit (a charge without an answer: the broken-connection case). A 503 is never charged.
        const db = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 1 });
        await waitFor(
          async () => {
            const [row] = await admin<
              { n: number }[]
            >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
              AND pid <> pg_backend_pid() AND application_name <> 'reliability-test'`;
            return row!.n === 0;
          },
          EVENT_WAIT_MS,
          "the orphaned statements to finish",
        );
        const charges = (await ledgerCheck(db, accountId)).charges;
        await db.close();
        const cutOff = outcomes.filter((o) => typeof o !== "number").length;
        figures.sigtermStuck = { stuck: outcomes.length, outcomes, chargesAfterwards: charges, exitCode: code, exitMs };
        expect(code).toBe(0);
        // The 10 s grace and a margin, plus how late this machine runs timers now (measured since the signal).
        expect(exitMs).toBeLessThan(12_000 + 2 * lateness.maxMs());
        expect(outcomes.every((o) => o === 503 || typeof o !== "number")).toBe(true);
        expect(charges).toBeLessThanOrEqual(cutOff);
      } finally {
        await killHard(server.p);
        await admin.end();
        await database.drop();
      }
    },
  );

  it(
    "on the embedded database too: streams end UNAVAILABLE, new connections " +
      "are refused, calls under way are answered, exit 0 within 12 s",
    async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), "signals-drain-"));
      const env = childEnv({ ...ENV, DATA_DIR: dataDir, PORT: "0", INTERNAL_PORT: "0", DEMO_FEED: "false" });
      const server = await start(env);
      try {
        const { account, apiKey } = await adminOf(server).createAccount({
          email: "drain-embedded@example.test",
          plan: "node",
        });
        const streams = [tailEvents(server.internalUrl)];
        await sleep(300);
        // Callers in loops: whatever they sent before the signal is answered.
        const agent = new http.Agent({ keepAlive: false });
        const tally = new Tally();
        let stop = false;
        const loops = Array.from({ length: 8 }, async () => {
          while (!stop) {
            try {
              tally.add(
                String(
                  (
                    await httpGet(
                      `${server.baseUrl}/api/v1/signals?symbols=BTC`,
                      { "x-api-key": apiKey },
                      agent,
                      20_000,
                    )
                  ).status,
                ),
              );
            } catch (err) {
              tally.add(reachedServer(err) ? "cut off" : "refused");
              await sleep(20);
            }
          }
        });
        // Every caller is under way (an answer each) before the signal.
        await waitFor(() => tally.total() >= 8, EVENT_WAIT_MS, "an answer to each caller", 20);
        const signalledAt = Date.now();
        const lateness = timerLateness();
        server.p.child.kill("SIGTERM");
        expect(await Promise.all(streams)).toEqual([{ code: "Unavailable", reason: "unavailable" }]);
        const code = await Promise.race([server.p.exited, sleep(20_000).then(() => "still running")]);
        const exitMs = Date.now() - signalledAt;
        stop = true;
        await Promise.all(loops);
        // The process is gone: its data directory can be opened here.
        const db = await openDb({ databaseUrl: null, dataDir });
        const charges = (await ledgerCheck(db, Number(account!.accountId))).charges;
        await db.close();
        figures.sigtermEmbedded = { calls: tally.toObject(), charges, exitCode: code, exitMs };
        expect(code).toBe(0);
        // The 10 s grace and a margin, plus how late this machine runs timers now (measured since the signal).
        expect(exitMs).toBeLessThan(12_000 + 2 * lateness.maxMs());
        expect(tally.get("200")).toBeGreaterThan(0);
        expect(Object.keys(tally.toObject()).filter((k) => !["200", "refused", "cut off"].includes(k))).toEqual([]);
        // Connections still in the kernel's accept queue when the listener closes are reset before
        // the process ever reads them ("cut off" here, like mid-call cuts): the ledger tells them
        // apart. Every charge is a 200 the caller received.
        expect(charges).toBe(tally.get("200"));
        expect(hasStackTrace(server.p.stderr())).toBe(false);
      } finally {
        await killHard(server.p);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});
