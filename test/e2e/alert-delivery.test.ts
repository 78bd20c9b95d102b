/**
 * Alert delivery when Telegram misbehaves, end to end: a real server (MarketFeed + outbox
 * worker) sends to a fake Bot API over HTTP that answers as each test scripts it. Each test
 * makes one live structure break on its own coin for its own member's chat, so its outbox row
 * and its requests are its own. The outcome is checked on both sides: the requests the fake
 * received (count, text, event id, spacing) and the outbox row in the database (attempts,
 * sent_at, failed_at, last_error).
 */

import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AlertDelivery, startAlertDelivery } from "../../src/alerts/delivery.ts";
import { parseAlertSettings, saveAlertSettings } from "../../src/alerts/settings.ts";
import { loadConfig } from "../../src/config.ts";
import type { DbHandle } from "../../src/db/client.ts";
import type { Candle } from "../../src/engine/index.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { backoffMs } from "../../src/retry.ts";
import {
  FAKE_BOT_TOKEN,
  type FakeTelegram,
  type ReceivedMessage,
  startFakeTelegram,
} from "../support/fake-telegram.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const H = 3_600_000;
const { history, breaker } = structureBreak(Date.UTC(2026, 10, 12));
/** The service clock stands just after the breaker's close, so that close is live. */
const liveClock = () => createTestClock(breaker.openTime + H + 5_000);

const RETRY_BASE_MS = 100;
/**
 * Short enough for the hang test, long enough that a loaded 2-core box stalling the test
 * process (PGlite runs in it) never turns a prompt answer into a timeout and a retry.
 */
const SEND_TIMEOUT_MS = 1_000;

const update = (symbol: string, c: Candle): CandleUpdate => ({ symbol, tf: "1h", ...c, closed: true });

interface OutboxRow {
  id: number;
  kind: string;
  chat_id: string | null;
  event_id: string | null;
  attempts: number;
  created_ms: number;
  sent_ms: number | null;
  failed_ms: number | null;
  next_attempt_ms: number;
  lease_ms: number | null;
  last_error: string | null;
}

async function outboxRows(db: DbHandle, where: { eventId?: string; accountId?: number }): Promise<OutboxRow[]> {
  const ms = (column: string) => sql.raw(`(extract(epoch FROM ${column}) * 1000)::float8`);
  const rows = await db.rows<Record<string, unknown>>(sql`
    SELECT id, kind, chat_id, event_id, attempts, last_error,
           ${ms("created_at")} AS created_ms, ${ms("sent_at")} AS sent_ms, ${ms("failed_at")} AS failed_ms,
           ${ms("next_attempt_at")} AS next_attempt_ms, ${ms("lease_until")} AS lease_ms
      FROM outbox
     WHERE (${where.eventId ?? null}::text IS NULL OR event_id = ${where.eventId ?? null})
       AND (${where.accountId ?? null}::bigint IS NULL OR account_id = ${where.accountId ?? null})
     ORDER BY id`);
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return rows.map((r) => ({
    id: Number(r.id),
    kind: String(r.kind),
    chat_id: r.chat_id as string | null,
    event_id: r.event_id as string | null,
    attempts: Number(r.attempts),
    created_ms: Number(r.created_ms),
    sent_ms: num(r.sent_ms),
    failed_ms: num(r.failed_ms),
    next_attempt_ms: Number(r.next_attempt_ms),
    lease_ms: num(r.lease_ms),
    last_error: r.last_error as string | null,
  }));
}

/** Polls `check` until it returns a value (not null), or fails with `what` after timeoutMs. */
async function until<T>(
  check: () => Promise<T | null> | T | null,
  what: string,
  timeoutMs = EVENT_WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

/** The one outbox row of `eventId`, once it has finished (sent or failed). */
async function finishedRow(db: DbHandle, eventId: string, timeoutMs?: number): Promise<OutboxRow> {
  return until(
    async () => {
      const rows = await outboxRows(db, { eventId });
      expect(rows).toHaveLength(1);
      return rows[0]!.sent_ms !== null || rows[0]!.failed_ms !== null ? rows[0]! : null;
    },
    `outbox row of ${eventId} to be sent or failed`,
    timeoutMs,
  );
}

const requestsTo = (telegram: FakeTelegram, chatId: string): ReceivedMessage[] =>
  telegram.received.filter((m) => m.chatId === chatId);

/** Waits until `n` requests for `chatId` have reached the fake. */
function requestsArrived(
  telegram: FakeTelegram,
  chatId: string,
  n: number,
  timeoutMs?: number,
): Promise<ReceivedMessage[]> {
  return until(
    () => (requestsTo(telegram, chatId).length >= n ? requestsTo(telegram, chatId) : null),
    `${n} requests to chat ${chatId}`,
    timeoutMs,
  );
}

/**
 * Nothing to await for "no further request": give the worker well over the longest delay it
 * could still use (a retry's backoff ceiling, an idle round), then the count must be unchanged.
 */
async function expectNoMoreRequests(
  telegram: FakeTelegram,
  chatId: string,
  count: number,
  quietMs: number,
): Promise<void> {
  await new Promise((r) => setTimeout(r, quietMs));
  expect(requestsTo(telegram, chatId)).toHaveLength(count);
}

/** Largest gap between ticks of a 20 ms timer: how long the event loop was blocked. */
function watchEventLoop(): () => number {
  let last = Date.now();
  let maxGap = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 20);
  return () => {
    clearInterval(timer);
    return Math.max(maxGap, Date.now() - last);
  };
}

let memberCounter = 0;

/**
 * A member following `symbol` on 1h in `chatId`; the coin's history arrives as a backfill
 * (no alert) and then its breaker closes live: exactly one outbox row, for this member.
 * Returns the event id the message must carry.
 */
async function liveBreak(
  server: TestServer,
  symbol: string,
  chatId: string,
): Promise<{ eventId: string; accountId: number }> {
  const { accountId } = await server.account({ email: `delivery${++memberCounter}@example.test` });
  expect(
    await saveAlertSettings(
      server.db.handle,
      accountId,
      parseAlertSettings({ chatId, symbols: symbol, timeframes: "1h" }),
    ),
  ).toBe(true);
  await server.feed!.ingest(
    history.map((c) => update(symbol, c)),
    { alerts: false },
  );
  await server.feed!.ingest([update(symbol, breaker)]);
  return { eventId: `${symbol}-1h-${breaker.openTime}`, accountId };
}

/** Every request carried the same text, naming the same event. */
function expectIdentical(requests: ReceivedMessage[], eventId: string): void {
  for (const r of requests) {
    expect(r.eventId).toBe(eventId);
    expect(r.text).toBe(requests[0]!.text);
  }
}

/** The server of the retries and of which closes alert (a live clock, fast retries). */
let telegram: FakeTelegram;
let server: TestServer;

beforeAll(async () => {
  telegram = await startFakeTelegram();
  server = await startTestServer({
    feed: true,
    clock: liveClock(),
    env: {
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ALERT_RETRY_BASE_MS: String(RETRY_BASE_MS),
      ALERT_RETRY_MAX_MS: "10000",
      ALERT_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS),
    },
  });
  expect(server.delivery.worker).not.toBeNull();
});

afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

describe("retries", () => {
  it("delivers after two 500s: three identical requests, each after at least the backoff's lower bound", async () => {
    telegram.script({ status: 500 }, { status: 500 });
    const { eventId } = await liveBreak(server, "RA", "1001");
    const row = await finishedRow(server.db.handle, eventId);
    const requests = requestsTo(telegram, "1001");
    expect(requests).toHaveLength(3);
    expectIdentical(requests, eventId);
    expect(requests[0]!.text).toContain("RA 1h: LONG");
    // After n failed attempts the delay is at least half the ceiling base·2^(n-1).
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(
      backoffMs(1, RETRY_BASE_MS, 10_000, "equal", () => 0),
    );
    expect(requests[2]!.at - requests[1]!.at).toBeGreaterThanOrEqual(
      backoffMs(2, RETRY_BASE_MS, 10_000, "equal", () => 0),
    );
    expect(row).toMatchObject({
      kind: "signal_alert",
      chat_id: "1001",
      attempts: 3,
      failed_ms: null,
      lease_ms: null,
      last_error: "HTTP 500: scripted failure",
    });
    expect(row.sent_ms).not.toBeNull();
    expect(telegram.delivered.filter((m) => m.chatId === "1001")).toHaveLength(1);
  });

  it("delivers after a send that hangs past ALERT_SEND_TIMEOUT_MS", async () => {
    telegram.script("hang");
    const { eventId } = await liveBreak(server, "RB", "1002");
    const row = await finishedRow(server.db.handle, eventId);
    const requests = requestsTo(telegram, "1002");
    expect(requests).toHaveLength(2);
    expectIdentical(requests, eventId);
    // The first attempt was abandoned at the timeout, then the backoff ran: read on the server's
    // own timeline (the database's clock), since the timeout runs from the send's start, which a
    // busy process reaches well before the fake sees the request. The row was queued before the
    // first send began, rescheduled (next_attempt_at) when the timeout had passed plus the
    // backoff, and sent again no earlier than that.
    expect(row.next_attempt_ms - row.created_ms).toBeGreaterThanOrEqual(
      SEND_TIMEOUT_MS + backoffMs(1, RETRY_BASE_MS, 10_000, "equal", () => 0),
    );
    expect(row.sent_ms!).toBeGreaterThanOrEqual(row.next_attempt_ms);
    expect(row).toMatchObject({
      attempts: 2,
      failed_ms: null,
      lease_ms: null,
      last_error: `timeout after ${SEND_TIMEOUT_MS} ms`,
    });
    expect(row.sent_ms).not.toBeNull();
  });

  it("waits retry_after after a 429 before the next attempt", async () => {
    telegram.script({
      status: 429,
      body: {
        ok: false,
        error_code: 429,
        description: "Too Many Requests: retry after 1",
        parameters: { retry_after: 1 },
      },
    });
    const { eventId } = await liveBreak(server, "RC", "1003");
    const row = await finishedRow(server.db.handle, eventId);
    const requests = requestsTo(telegram, "1003");
    expect(requests).toHaveLength(2);
    expectIdentical(requests, eventId);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(row).toMatchObject({
      attempts: 2,
      failed_ms: null,
      last_error: "HTTP 429: Too Many Requests: retry after 1",
    });
    expect(row.sent_ms).not.toBeNull();
  });

  it(
    "pauses every chat during a 429's retry_after (flood " + "control is per bot), without blocking the process",
    async () => {
      telegram.script({
        status: 429,
        body: {
          ok: false,
          error_code: 429,
          description: "Too Many Requests: retry after 2",
          parameters: { retry_after: 2 },
        },
      });
      const blocked = watchEventLoop();
      const first = await liveBreak(server, "RD", "1004");
      const [limited] = await requestsArrived(telegram, "1004", 1);
      // The pause starts when the worker reads the 429 (it keeps claiming while a send is in
      // flight): from the row rescheduled with that answer on.
      await until(async () => {
        const [row] = await outboxRows(server.db.handle, { eventId: first.eventId });
        return row?.last_error?.startsWith("HTTP 429") ? row : null;
      }, "the 429 recorded on the first alert's row");
      // Another member's alert is written during the pause: it must wait for the pause too.
      const second = await liveBreak(server, "RE", "1005");
      const [held] = await requestsArrived(telegram, "1005", 1);
      await finishedRow(server.db.handle, first.eventId);
      await finishedRow(server.db.handle, second.eventId);
      const maxStallMs = blocked();
      expect(held!.at - limited!.at).toBeGreaterThanOrEqual(2000);
      expect(requestsTo(telegram, "1004")).toHaveLength(2);
      expect(requestsTo(telegram, "1005")).toHaveLength(1);
      expect(requestsTo(telegram, "1004")[1]!.at - limited!.at).toBeGreaterThanOrEqual(2000);
      // The pause is a wait, not a spin: timers, HTTP and the database keep being served.
      expect(maxStallMs).toBeLessThan(1000);
    },
  );

  it("records a 400 'chat not found' as failed at once, with no retry", async () => {
    telegram.script({ status: 400, body: { ok: false, error_code: 400, description: "Bad Request: chat not found" } });
    const { eventId } = await liveBreak(server, "RF", "1006");
    const row = await finishedRow(server.db.handle, eventId);
    expect(row).toMatchObject({
      attempts: 1,
      sent_ms: null,
      lease_ms: null,
      last_error: "HTTP 400: Bad Request: chat not found",
    });
    expect(row.failed_ms).not.toBeNull();
    // A retry would have come within the backoff ceiling (100 ms); wait well past it.
    await expectNoMoreRequests(telegram, "1006", 1, 800);
    expect(await outboxRows(server.db.handle, { eventId })).toEqual([row]);
  });

  it("records a 403 (bot blocked by the member) as failed at once, with no retry", async () => {
    telegram.script({
      status: 403,
      body: { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" },
    });
    const { eventId } = await liveBreak(server, "RG", "1007");
    const row = await finishedRow(server.db.handle, eventId);
    expect(row).toMatchObject({
      attempts: 1,
      sent_ms: null,
      last_error: "HTTP 403: Forbidden: bot was blocked by the user",
    });
    await expectNoMoreRequests(telegram, "1007", 1, 500);
  });
});

describe("which closes alert", () => {
  // ALERT_MAX_DELAY is its default, 300 s. The tests move the service clock; put it back after.
  let clockBefore: number;
  beforeAll(() => {
    expect(server.config.alerts.maxDelayMs).toBe(300_000);
    clockBefore = server.clock();
  });
  afterAll(() => server.clock.set(clockBefore));

  async function breakAt(symbol: string, clockMs: number, alerts = true): Promise<{ live: boolean; queued: number }> {
    const { accountId } = await server.account({ email: `which${++memberCounter}@example.test` });
    await saveAlertSettings(
      server.db.handle,
      accountId,
      parseAlertSettings({ chatId: "4001", symbols: symbol, timeframes: "1h" }),
    );
    await server.feed!.ingest(
      history.map((c) => update(symbol, c)),
      { alerts: false },
    );
    server.clock.set(clockMs);
    await server.feed!.ingest([update(symbol, breaker)], { alerts });
    const [event] = await server.db.handle.rows<{ live: boolean }>(
      sql`SELECT live FROM signal_events WHERE id = ${`${symbol}-1h-${breaker.openTime}`}`,
    );
    expect(event).toBeDefined();
    return { live: event!.live, queued: (await outboxRows(server.db.handle, { accountId })).length };
  }

  it(
    "alerts a close received exactly ALERT_MAX_DELAY after " + "it happened, and stores a later one as history",
    async () => {
      const close = breaker.openTime + H;
      expect(await breakAt("LA", close + 300_000)).toEqual({ live: true, queued: 1 });
      expect(await breakAt("LB", close + 300_001)).toEqual({ live: false, queued: 0 });
    },
  );

  it("never alerts a backfill, however fresh its close", async () => {
    expect(await breakAt("LC", breaker.openTime + H + 1_000, false)).toEqual({ live: false, queued: 0 });
  });

  it("does not alert a member whose subscription has ended", async () => {
    const { accountId } = await server.account({ subscriptionUntil: new Date(breaker.openTime) });
    await saveAlertSettings(
      server.db.handle,
      accountId,
      parseAlertSettings({ chatId: "4002", symbols: "LD", timeframes: "1h" }),
    );
    expect(await breakAt("LD", breaker.openTime + H + 1_000)).toEqual({ live: true, queued: 1 });
    expect(await outboxRows(server.db.handle, { accountId })).toEqual([]);
    // Delivered: the two live closes, to the subscribed member only.
    const la = await finishedRow(server.db.handle, `LA-1h-${breaker.openTime}`);
    const ld = await finishedRow(server.db.handle, `LD-1h-${breaker.openTime}`);
    expect([la.sent_ms, ld.sent_ms].every((t) => t !== null)).toBe(true);
    expect(new Set(telegram.delivered.filter((m) => m.chatId === "4001").map((m) => m.eventId))).toEqual(
      new Set([`LA-1h-${breaker.openTime}`, `LD-1h-${breaker.openTime}`]),
    );
    expect(requestsTo(telegram, "4002")).toEqual([]);
  });
});

describe("giving up", () => {
  const GIVE_UP_S = 2;
  let telegram: FakeTelegram;
  let server: TestServer;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    server = await startTestServer({
      feed: true,
      clock: liveClock(),
      env: {
        TELEGRAM_API_BASE: telegram.apiBase,
        TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        ALERT_RETRY_BASE_MS: "100",
        ALERT_RETRY_MAX_MS: "300",
        ALERT_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS),
        ALERT_GIVE_UP_AFTER: String(GIVE_UP_S),
      },
    });
  });

  afterAll(async () => {
    await server?.close();
    await telegram?.close();
  });

  it(
    `records a message still failing after ALERT_GIVE_UP_AFTER ` +
      `as failed with its last error, and never sends it again`,
    async () => {
      telegram.script(
        ...Array.from({ length: 200 }, () => ({
          status: 502 as const,
          body: { ok: false, error_code: 502, description: "Bad Gateway" },
        })),
      );
      const { eventId } = await liveBreak(server, "GA", "2001");
      const row = await finishedRow(server.db.handle, eventId);
      expect(row.sent_ms).toBeNull();
      expect(row.failed_ms).not.toBeNull();
      expect(row.lease_ms).toBeNull();
      // Given up around the deadline: not long before it (at most one retry delay early) nor long after.
      expect(row.failed_ms! - row.created_ms).toBeGreaterThanOrEqual(GIVE_UP_S * 1000 - 300);
      expect(row.failed_ms! - row.created_ms).toBeLessThan(GIVE_UP_S * 1000 + 5_000);
      const requests = requestsTo(telegram, "2001");
      expect(requests.length).toBeGreaterThanOrEqual(3);
      expectIdentical(requests, eventId);
      // Given up after the last failed send, or found expired when leased for one more (that
      // lease counted an attempt but sent nothing): either way the error names the real sends.
      expect(row.last_error).toBe(`gave up after ${requests.length} attempts; last error: HTTP 502: Bad Gateway`);
      expect([requests.length, requests.length + 1]).toContain(row.attempts);
      // Retries were never more than ALERT_RETRY_MAX_MS (300 ms) apart.
      await expectNoMoreRequests(telegram, "2001", requests.length, 1_000);
      expect(await outboxRows(server.db.handle, { eventId })).toEqual([row]);
    },
  );
});

describe("no TELEGRAM_BOT_TOKEN", () => {
  let telegram: FakeTelegram;
  let server: TestServer;
  let lateWorker: AlertDelivery | null = null;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    server = await startTestServer({ feed: true, clock: liveClock(), env: { TELEGRAM_API_BASE: telegram.apiBase } });
  });

  afterAll(async () => {
    await lateWorker?.stop();
    await server?.close();
    await telegram?.close();
  });

  it("keeps alerts pending (nothing lost) and a worker started later delivers each once, in order", async () => {
    expect(server.delivery.worker).toBeNull();
    const a = await liveBreak(server, "NA", "3001");
    const b = await liveBreak(server, "NB", "3002");
    // No worker: the rows stay untouched. Longer than a worker's idle round (1 s) would take.
    await new Promise((r) => setTimeout(r, 1_200));
    const waiting = await outboxRows(server.db.handle, {});
    expect(waiting.map((r) => r.event_id)).toEqual([a.eventId, b.eventId]);
    for (const row of waiting)
      expect(row).toMatchObject({ attempts: 0, sent_ms: null, failed_ms: null, lease_ms: null, last_error: null });
    expect(telegram.received).toHaveLength(0);

    // The operator sets the token and restarts delivery on the same database.
    const config = loadConfig({
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      LOG_LEVEL: "silent",
    });
    lateWorker = await startAlertDelivery(config, server.db.handle, pino({ level: "silent" }));
    const delivered = await telegram.waitForDelivered(2);
    expect(delivered.map((m) => [m.chatId, m.eventId])).toEqual([
      ["3001", a.eventId],
      ["3002", b.eventId],
    ]);
    const rows = [await finishedRow(server.db.handle, a.eventId), await finishedRow(server.db.handle, b.eventId)];
    for (const row of rows) expect(row).toMatchObject({ attempts: 1, failed_ms: null, last_error: null });
    for (const row of rows) expect(row.sent_ms).not.toBeNull();
    await expectNoMoreRequests(telegram, "3001", 1, 500);
    expect(telegram.received).toHaveLength(2);
  });
});
