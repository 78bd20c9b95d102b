/**
 * A server process killed (SIGKILL) between sending an alert and acknowledging it, on the
 * database in use (PGlite in a temporary DATA_DIR, or a fresh Postgres database). Delivery is
 * at least once: after the lease the restarted server sends that message once more, identical
 * and with the same event id; the message already acknowledged before the crash is never sent
 * again; the other pending alerts go out once; and then nothing more is ever sent.
 *
 * The servers run on the real clock, so the candles are built relative to Date.now(): the
 * breakers close in the last hour (within ALERT_MAX_DELAY) and are pushed live.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import type { Candle } from "../../src/engine/index.ts";
import {
  FAKE_BOT_TOKEN,
  type FakeTelegram,
  type ReceivedMessage,
  startFakeTelegram,
} from "../support/fake-telegram.ts";
import { childEnv, type ServerProcess, startServerProcess } from "../support/processes.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const H = 3_600_000;
const INTERNAL_TOKEN = "alert-crash-internal-token-0042";
/**
 * The crash must land while CA's send hangs: the test kills the server the moment CA's request
 * reaches the fake, and the server gives the send up this long after it began it. So this is the
 * margin for the server's own delays before the request arrives (and for a prompt answer, CZ's,
 * to be read before it counts as a timeout) on a loaded machine; it also sets the lease below.
 */
const SEND_TIMEOUT_MS = 3_000;
/** The worker's lease: 2 × ALERT_SEND_TIMEOUT_MS + 5 s. */
const LEASE_MS = 2 * SEND_TIMEOUT_MS + 5_000;
const CHAT = "5001";
const PUBLIC_BASE_URL = "http://signals.test";

interface OutboxRow {
  event_id: string;
  attempts: number;
  sent: boolean;
  failed: boolean;
  lease_ms: number | null;
}

async function readOutbox(db: DbHandle): Promise<OutboxRow[]> {
  const rows = await db.rows<Record<string, unknown>>(sql`
    SELECT event_id, attempts, sent_at IS NOT NULL AS sent, failed_at IS NOT NULL AS failed,
           (extract(epoch FROM lease_until) * 1000)::float8 AS lease_ms
      FROM outbox ORDER BY id`);
  return rows.map((r) => ({
    event_id: String(r.event_id),
    attempts: Number(r.attempts),
    sent: r.sent === true,
    failed: r.failed === true,
    lease_ms: r.lease_ms === null ? null : Number(r.lease_ms),
  }));
}

async function until<T>(check: () => T | null, what: string, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe(`a server killed between send and acknowledgement (${usingPostgres ? "Postgres" : "PGlite"})`, () => {
  let telegram: FakeTelegram;
  let dataDir: string | null = null;
  let database: { url: string; drop: () => Promise<void> } | null = null;
  const servers: ServerProcess[] = [];
  const sessions: Http2SessionManager[] = [];

  // The breakers open in the previous full hour: closed, and less than 2 h before now.
  const breakerOpen = Math.floor(Date.now() / H) * H - H;
  const { history, breaker } = structureBreak(breakerOpen - 60 * H);
  const eventId = (symbol: string) => `${symbol}-1h-${breakerOpen}`;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    if (usingPostgres) database = await createPostgresDatabase();
    else dataDir = mkdtempSync(path.join(tmpdir(), "signals-alert-crash-"));
  });

  afterAll(async () => {
    for (const s of sessions) s.abort();
    for (const s of servers) await s.kill();
    await telegram?.close();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const env = () =>
    childEnv({
      ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: dataDir! }),
      PORT: "0",
      INTERNAL_PORT: "0",
      INTERNAL_TOKEN,
      DEMO_ACCOUNT: "false",
      DEMO_FEED: "false",
      LOG_LEVEL: "info",
      PUBLIC_BASE_URL,
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ALERT_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS),
      ALERT_MAX_DELAY: "7200",
      ALERT_RETRY_BASE_MS: "100",
    });

  async function startServer(): Promise<ServerProcess> {
    const server = await startServerProcess(env());
    servers.push(server);
    return server;
  }

  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
    return next(req);
  };

  function admin(server: ServerProcess): Client<typeof AdminService> {
    return createClient(
      AdminService,
      createConnectTransport({ baseUrl: server.internalUrl, httpVersion: "1.1", interceptors: [bearer] }),
    );
  }

  /** Streams candles to the server's IngestService over gRPC, as a feeder does. */
  async function push(
    server: ServerProcess,
    mode: "live" | "backfill",
    updates: Array<{ symbol: string; candle: Candle }>,
  ): Promise<void> {
    const sessionManager = new Http2SessionManager(server.internalUrl);
    sessions.push(sessionManager);
    const client = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.internalUrl, sessionManager, interceptors: [bearer] }),
    );
    async function* requests(): AsyncGenerator<PushCandlesRequest> {
      for (const { symbol, candle } of updates) {
        yield create(PushCandlesRequestSchema, {
          symbol,
          tf: "1h",
          ...candle,
          openTime: BigInt(candle.openTime),
          closed: true,
        });
      }
    }
    const res = await client.pushCandles(requests(), { headers: { "x-ingest-mode": mode } });
    expect(res.accepted).toBe(BigInt(updates.length));
    sessionManager.abort();
  }

  /** Reads the outbox with the server stopped (PGlite: one process per data directory). */
  async function withDb<T>(read: (db: DbHandle) => Promise<T>): Promise<T> {
    const db = await openDb({ databaseUrl: database?.url ?? null, dataDir: dataDir ?? "memory://", poolSize: 1 });
    try {
      return await read(db);
    } finally {
      await db.close();
    }
  }

  const requestsFor = (symbol: string): ReceivedMessage[] =>
    telegram.received.filter((m) => m.eventId === eventId(symbol));

  it(
    "re-sends the in-flight message once after the lease, " + "delivers the rest once, and then sends nothing more",
    async () => {
      const first = await startServer();
      const { account } = await admin(first).createAccount({ email: "crash@example.test", plan: "node" });
      await admin(first).setAlerts({
        accountId: account!.accountId,
        alerts: { chatId: CHAT, symbols: ["CZ", "CA", "CB", "CC"], timeframes: ["1h"] },
      });
      // History is a backfill: its signal events are stored but alert nobody.
      await push(
        first,
        "backfill",
        ["CZ", "CA", "CB", "CC"].flatMap((symbol) => history.map((candle) => ({ symbol, candle }))),
      );

      // CZ is delivered and acknowledged before the crash.
      await push(first, "live", [{ symbol: "CZ", candle: breaker }]);
      await telegram.waitForDelivered(1);

      // CA's send hangs; CB is written with it. The worker only leases again after its batch is
      // acknowledged, so CA's request arriving means CZ's acknowledgement is committed. The server
      // is killed as soon as that request has arrived and the push has its answer (the request
      // may come first), well within the send timeout: CA is sent but never acknowledged.
      telegram.scriptFor(CHAT, "hang");
      let pushed = false;
      let crashed: Promise<void> | null = null;
      const crashOnceBoth = () => {
        if (pushed && requestsFor("CA").length > 0) crashed ??= first.kill();
      };
      telegram.onReceived(crashOnceBoth);
      const pushedAt = Date.now();
      await push(first, "live", [
        { symbol: "CA", candle: breaker },
        { symbol: "CB", candle: breaker },
      ]);
      pushed = true;
      crashOnceBoth();
      const [hung] = await until(
        () => (requestsFor("CA").length > 0 ? requestsFor("CA") : null),
        "CA's request",
        EVENT_WAIT_MS,
      );
      await crashed;
      expect(telegram.received.map((m) => m.eventId)).toEqual([eventId("CZ"), eventId("CA")]);

      const atCrash = await withDb(readOutbox);
      expect(atCrash.map((r) => r.event_id)).toEqual([eventId("CZ"), eventId("CA"), eventId("CB")]);
      const [cz, ca, cb] = atCrash as [OutboxRow, OutboxRow, OutboxRow];
      expect(cz).toMatchObject({ attempts: 1, sent: true, failed: false, lease_ms: null });
      // CA is still leased: the crash left it neither acknowledged nor retried (a retry clears the
      // lease), and the lease runs LEASE_MS from its claim, after the push. (Whether it has run out
      // by now depends only on how long reopening the database took.)
      expect(ca).toMatchObject({ attempts: 1, sent: false, failed: false });
      expect(ca.lease_ms).not.toBeNull();
      expect(ca.lease_ms).toBeGreaterThanOrEqual(pushedAt + LEASE_MS);
      // CB was leased in CA's batch (behind it in the chat's queue) or not yet leased at all.
      expect(cb).toMatchObject({ sent: false, failed: false });
      expect(cb.attempts).toBe(cb.lease_ms === null ? 0 : 1);

      // Restart on the same database. A killed PGlite server leaves its lock file behind, naming
      // a dead process: the new server must take over the directory (and recover the database).
      if (dataDir) {
        const lockFile = path.join(dataDir, "server.lock");
        expect(existsSync(lockFile)).toBe(true);
        expect((JSON.parse(readFileSync(lockFile, "utf8")) as { pid: number }).pid).toBe(first.pid);
      }
      const second = await startServer();
      // New alerts flow at once, before the crashed lease runs out.
      await push(second, "live", [{ symbol: "CC", candle: breaker }]);
      await telegram.waitForDelivered(4);

      const [again] = await until(
        () => (requestsFor("CA").length >= 2 ? [requestsFor("CA")[1]!] : null),
        "CA's re-send",
        EVENT_WAIT_MS,
      );
      // Not before the lease ran out; identical text, same event id.
      expect(again!.at).toBeGreaterThanOrEqual(ca.lease_ms!);
      expect(again!.text).toBe(hung!.text);
      expect(again!.eventId).toBe(eventId("CA"));
      expect(again!.chatId).toBe(CHAT);

      // Nothing more is ever sent: the server stops (its stop writes the acknowledgements of what
      // it sent) with every row acknowledged, so no row is left to lease, and each row's attempts
      // count every lease it had, so no request went out unseen before the stop.
      expect(await second.stop()).toBe(0);
      const end = await withDb(readOutbox);
      expect(end.map((r) => r.event_id)).toEqual([eventId("CZ"), eventId("CA"), eventId("CB"), eventId("CC")]);
      for (const row of end) expect(row).toMatchObject({ sent: true, failed: false, lease_ms: null });
      expect(end.map((r) => r.attempts)).toEqual([1, 2, cb.attempts + 1, 1]);
      const perEvent = (symbol: string) => telegram.received.filter((m) => m.eventId === eventId(symbol)).length;
      expect({ CZ: perEvent("CZ"), CA: perEvent("CA"), CB: perEvent("CB"), CC: perEvent("CC") }).toEqual({
        CZ: 1,
        CA: 2,
        CB: 1,
        CC: 1,
      });
      expect(telegram.received).toHaveLength(5);
      expect(telegram.delivered.map((m) => m.eventId).sort()).toEqual([
        eventId("CA"),
        eventId("CB"),
        eventId("CC"),
        eventId("CZ"),
      ]);
      for (const m of telegram.received) expect(m.text).toContain(`${PUBLIC_BASE_URL}/charts/`);
    },
  );
});
