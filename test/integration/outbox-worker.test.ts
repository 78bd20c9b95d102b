/**
 * The outbox worker under conditions a single happy server does not show: several workers on
 * one database (any number of server processes run one) while Telegram is slow, and a
 * database that fails for a while. Real workers over a real database and a fake Bot API over
 * HTTP; the only fault injected is the database handle refusing queries.
 */

import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../src/accounts/accounts.ts";
import { OutboxWorker } from "../../src/alerts/outbox-worker.ts";
import { createTelegramSender } from "../../src/alerts/telegram.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import type { DbHandle } from "../../src/db/client.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { waitFor } from "../support/reliability.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const logger = pino({ level: "silent" });
let tdb: TestDb;
let telegram: FakeTelegram;
let accountId: number;
const workers: OutboxWorker[] = [];

beforeAll(async () => {
  tdb = await createTestDb();
  telegram = await startFakeTelegram();
  const limits = loadConfig({}).limits;
  ({
    summary: { accountId },
  } = await createAccount(
    tdb.handle,
    { email: "worker@example.test", plan: "node", subscriptionUntil: new Date(Date.now() + 86_400_000) },
    limits,
    Date.now(),
  ));
});

afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});

afterAll(async () => {
  await telegram?.close();
  await tdb?.drop();
});

/** A worker over `db` (the test database unless given), stopped after each test; `batchSize` rows a claim. */
function worker(config: Config, { db = tdb.handle, batchSize }: { db?: DbHandle; batchSize?: number } = {}) {
  const sender = createTelegramSender({
    apiBase: config.alerts.telegramApiBase,
    botToken: FAKE_BOT_TOKEN,
    timeoutMs: config.alerts.sendTimeoutMs,
  });
  const w = new OutboxWorker({
    db,
    logger,
    sender,
    alerts: config.alerts,
    publicBaseUrl: config.publicBaseUrl,
    batchSize,
  });
  workers.push(w);
  return w;
}

/** The credits_left of each message the fake Bot API received for `chatId`, in arrival order. */
const chat = (chatId: string) =>
  telegram.received.filter((m) => m.chatId === chatId).map((m) => /(\d+) left/.exec(m.text)![1]);

/** Queues `count` low-balance notices for `chatId`, told apart by their credits_left. */
async function queueNotices(chatId: string, count: number, firstCredits: number): Promise<void> {
  await tdb.handle.rows(sql`
    INSERT INTO outbox (kind, account_id, chat_id, payload)
    SELECT 'low_balance', ${accountId}, ${chatId}, jsonb_build_object('credits_left', ${firstCredits}::int + g,
    'threshold', 1500)
      FROM generate_series(0, ${count - 1}::int) AS g`);
}

async function rowsOf(chatId: string) {
  return tdb.handle.rows<{ sent: boolean; failed: boolean; attempts: number | string }>(sql`
    SELECT sent_at IS NOT NULL AS sent, failed_at IS NOT NULL AS failed, attempts FROM outbox WHERE chat_id = ${chatId}
    ORDER BY id`);
}

describe("several workers on one database", () => {
  it("never sends a message twice when one chat's queue takes longer than a lease to send", async () => {
    // Lease = 2 × 1000 + 5000 = 7 s. Forty messages to one chat go out one after the other at
    // 200 ms each: 8 s for the batch, so the last ones wait in the queue past their lease.
    const config = loadConfig({
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ALERT_SEND_TIMEOUT_MS: "1000",
    });
    const COUNT = 40;
    telegram.scriptFor("6001", ...Array.from({ length: COUNT }, () => ({ status: 200, delayMs: 200 })));
    await queueNotices("6001", COUNT, 100);
    const first = worker(config);
    await first.start();
    await telegram.waitForReceived(1);
    // The second worker (another server process) starts while the first is busy with the batch.
    const second = worker(config);
    await second.start();
    await waitFor(async () => (await rowsOf("6001")).every((r) => r.sent), EVENT_WAIT_MS, "6001's rows sent");
    const rows = await rowsOf("6001");
    expect(rows.every((r) => r.sent && !r.failed)).toBe(true);
    const texts = chat("6001");
    const dupes = texts.filter((t, i) => texts.indexOf(t) !== i);
    expect(dupes).toEqual([]);
    expect(texts).toHaveLength(COUNT);
    // In order, each leased and sent once.
    expect(texts).toEqual(Array.from({ length: COUNT }, (_, i) => String(100 + i)));
    expect(rows.map((r) => Number(r.attempts))).toEqual(Array.from({ length: COUNT }, () => 1));
    // The first worker kept its lease on the whole batch: the second found nothing to take over.
    expect([first.counts.sent, second.counts.sent]).toEqual([COUNT, 0]);
  }, 60_000);
});

describe("one chat's long queue", () => {
  it("does not hold back other chats' messages claimed after it, and keeps its own in order", async () => {
    // Two rows a claim: the slow chat's two rows are one claim, the other chat's a later one.
    const config = loadConfig({ TELEGRAM_API_BASE: telegram.apiBase, TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN });
    let release!: () => void;
    telegram.scriptFor("6003", { status: 200, until: new Promise<void>((resolve) => (release = resolve)) });
    await queueNotices("6003", 2, 300);
    await queueNotices("6004", 2, 400);
    const w = worker(config, { batchSize: 2 });
    await w.start();
    // The other chat's messages are delivered while the first message of 6003 is still unanswered.
    await waitFor(() => chat("6004").length === 2, EVENT_WAIT_MS, "chat 6004's two messages");
    expect(chat("6004")).toEqual(["400", "401"]);
    expect(chat("6003")).toEqual(["300"]);
    release();
    await waitFor(() => chat("6003").length === 2, EVENT_WAIT_MS, "chat 6003's second message");
    expect(chat("6003")).toEqual(["300", "301"]);
    await waitFor(async () => (await rowsOf("6003")).every((r) => r.sent), EVENT_WAIT_MS, "6003's rows acknowledged");
    expect(w.counts.sent).toBe(4);
  });
});

describe("a chat whose message must wait", () => {
  const smallClaimsWorker = (config: Config) => worker(config, { batchSize: 2 });

  it("keeps its order across claims: the rows behind a retried one wait for it", async () => {
    // Two rows a claim, five rows: the retried first row's followers sit in this claim and the
    // next ones; none may overtake it.
    const config = loadConfig({
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ALERT_RETRY_BASE_MS: "300",
    });
    telegram.scriptFor("6005", { status: 500, body: { ok: false, error_code: 500, description: "Internal" } });
    await queueNotices("6005", 5, 500);
    const w = smallClaimsWorker(config);
    await w.start();
    await waitFor(async () => (await rowsOf("6005")).every((r) => r.sent), EVENT_WAIT_MS, "6005's rows sent");
    expect(chat("6005")).toEqual(["500", "500", "501", "502", "503", "504"]);
    // The rows handed back were not counted as attempts.
    expect((await rowsOf("6005")).map((r) => Number(r.attempts))).toEqual([2, 1, 1, 1, 1]);
  });

  it("stopping waits for the send in flight only and hands the chat's other rows back unsent", async () => {
    const config = loadConfig({ TELEGRAM_API_BASE: telegram.apiBase, TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    telegram.scriptFor("6006", { status: 200, until: held });
    await queueNotices("6006", 4, 600);
    const w = smallClaimsWorker(config);
    await w.start();
    await waitFor(() => chat("6006").length === 1, EVENT_WAIT_MS, "6006's first message");
    // Every row claimed (two claims of two) before the stop: nothing else is in flight.
    await waitFor(
      async () =>
        (await tdb.handle.rows(sql`SELECT 1 FROM outbox WHERE chat_id = '6006' AND lease_until IS NULL`)).length === 0,
      EVENT_WAIT_MS,
      "6006's rows claimed",
    );
    const stopped = w.stop();
    release();
    await stopped;
    const rows = await tdb.handle.rows<{ sent: boolean; leased: boolean; attempts: number }>(sql`
      SELECT sent_at IS NOT NULL AS sent, lease_until IS NOT NULL AS leased, attempts FROM outbox
       WHERE chat_id = '6006' ORDER BY id`);
    expect(rows).toEqual([
      { sent: true, leased: false, attempts: 1 },
      { sent: false, leased: false, attempts: 0 },
      { sent: false, leased: false, attempts: 0 },
      { sent: false, leased: false, attempts: 0 },
    ]);
    expect(chat("6006")).toEqual(["600"]);
    // A new worker sends them at once, in order: they were not left leased.
    const next = smallClaimsWorker(config);
    await next.start();
    await waitFor(() => chat("6006").length === 4, EVENT_WAIT_MS, "6006's other messages");
    expect(chat("6006")).toEqual(["600", "601", "602", "603"]);
  });
});

describe("a database that fails for a while", () => {
  it("waits between rounds instead of spinning, and delivers once the database is back", async () => {
    const config = loadConfig({
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ALERT_SEND_TIMEOUT_MS: "1000",
    });
    let down = true;
    let queries = 0;
    const flaky: DbHandle = {
      ...tdb.handle,
      rows: (query) => {
        queries++;
        // Refused asynchronously, as a dropped connection is (after a trip through the event loop).
        if (down) return new Promise((_, reject) => setImmediate(() => reject(new Error("connection refused"))));
        return tdb.handle.rows(query);
      },
    };
    await queueNotices("6002", 1, 900);
    const startedAt = Date.now();
    const w = worker(config, { db: flaky });
    await w.start();
    // One failed round (one query) per second, the worker's wait after a failure, not thousands
    // of back-to-back queries: n rounds take at least n - 1 of those waits, however fast or slow
    // the machine (a timer may fire a millisecond early, hence the 10 ms).
    await waitFor(() => queries >= 3, EVENT_WAIT_MS, "three failed rounds");
    const rounds = queries;
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual((rounds - 1) * 1000 - 10);
    expect(telegram.received.filter((m) => m.chatId === "6002")).toHaveLength(0);
    down = false;
    await waitFor(async () => (await rowsOf("6002")).every((r) => r.sent), EVENT_WAIT_MS, "6002's row sent");
    expect(await rowsOf("6002")).toEqual([{ sent: true, failed: false, attempts: expect.anything() }]);
    expect(telegram.delivered.filter((m) => m.chatId === "6002").map((m) => /(\d+) left/.exec(m.text)![1])).toEqual([
      "900",
    ]);
  });
});
