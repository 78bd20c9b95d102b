/**
 * History never alerts. Real BTC 1h candles up to 2023-11-26 22:00 UTC reach a server whose
 * members follow BTC, twice, on fresh databases:
 *  - A: three years (from the file's start) through the CLI's import function (`importCandles`,
 *    x-ingest-mode: backfill) over gRPC, with the service clock 5 s after the last close, so
 *    the last candle (which ends the 1h signal) would alert if the import were taken as live;
 *  - B: the last 18 months as a plain live-mode push, with the clock 10 minutes
 *    (2 × ALERT_MAX_DELAY) after the last close.
 * Either way thousands of events are stored with live=false, the outbox stays empty and the
 * fake Telegram receives nothing. Then a live close built from the engine state after the
 * import (23:00, just above every unbroken swing high, so the 1h, 4h and 1d candles all close
 * and all change) sends exactly one message per subscribed timeframe, whose event id the API
 * then returns as signal_id. A restart over the same database, and the feeder resending the
 * same candles to either server, alert nothing more.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { create } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { asc, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestService, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import { saveAlertSettings } from "../../src/alerts/settings.ts";
import { importCandles } from "../../src/cli/import-command.ts";
import type { DbHandle } from "../../src/db/client.ts";
import { outbox, signalEvents } from "../../src/db/schema.ts";
import { type Candle, createEngineState, type EngineState, readClosed, stepClosed } from "../../src/engine/index.ts";
import { TIMEFRAME_MS } from "../../src/market/timeframes.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { waitForOutboxIdle } from "../support/outbox.ts";
import { aggregateCandles, loadRealCandles, REAL_CANDLES_DIR, realCandlesAvailable } from "../support/real-candles.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import {
  createTestClock,
  INTERNAL_TOKEN,
  startTestServer,
  type TestClock,
  type TestServer,
} from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const H = 3_600_000;
const TFS = ["1h", "4h", "1d"] as const;
type Tf = (typeof TFS)[number];
const BTC_FILE = `${REAL_CANDLES_DIR}BTCUSDT_1h.csv.gz`;
/** Open time of the last imported candle: 22:00 UTC, so the next one closes 1h, 4h and 1d. */
const LAST_OPEN = Date.UTC(2023, 10, 26, 22);
const BREAKER_OPEN = LAST_OPEN + H;

const sessions: Http2SessionManager[] = [];
afterAll(() => {
  for (const s of sessions) s.abort();
});

function internalTransport(server: TestServer): Transport {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
    return next(req);
  };
  const sessionManager = new Http2SessionManager(server.internalUrl);
  sessions.push(sessionManager);
  return createGrpcTransport({ baseUrl: server.internalUrl, sessionManager, interceptors: [auth] });
}

/** Pushes candles in one PushCandles call, in the default (live) mode unless told otherwise. */
async function push(client: Client<typeof IngestService>, candles: Candle[], closed = true) {
  async function* requests() {
    for (const c of candles)
      yield create(PushCandlesRequestSchema, { symbol: "BTC", tf: "1h", ...c, openTime: BigInt(c.openTime), closed });
  }
  const res = await client.pushCandles(requests());
  return { accepted: Number(res.accepted), rejected: Number(res.rejected), duplicates: Number(res.duplicates) };
}

// ---- what the engine says -------------------------------------------------------------------

interface Reference {
  history: Candle[];
  /** Events of the history per the engine, as stored rows would hold them. */
  events: { id: string; tf: Tf; signal: string; live: boolean }[];
  /** Engine states after the history (complete buckets only for 4h and 1d). */
  states: Record<Tf, EngineState>;
}

function seriesOf(hourly: Candle[], tf: Tf): Candle[] {
  if (tf === "1h") return hourly;
  const buckets = aggregateCandles(hourly, TIMEFRAME_MS[tf]);
  const last = buckets[buckets.length - 1]!;
  // A bucket closes with its last hour; the feed keeps an incomplete one as forming.
  return hourly[hourly.length - 1]!.openTime + H === last.openTime + TIMEFRAME_MS[tf] ? buckets : buckets.slice(0, -1);
}

function reference(hourly: Candle[]): Reference {
  const events: Reference["events"] = [];
  const states = {} as Record<Tf, EngineState>;
  for (const tf of TFS) {
    const state = createEngineState();
    for (const c of seriesOf(hourly, tf)) {
      const before = state.signalAt;
      stepClosed(state, c);
      if (state.signalAt !== before)
        events.push({ id: `BTC-${tf}-${c.openTime}`, tf, signal: state.signal, live: false });
    }
    states[tf] = state;
  }
  return { history: hourly, events: events.sort((a, b) => a.id.localeCompare(b.id)), states };
}

const bucketOf = (tf: Tf) => Math.floor(BREAKER_OPEN / TIMEFRAME_MS[tf]) * TIMEFRAME_MS[tf];
const breakIds = Object.fromEntries(TFS.map((tf) => [tf, `BTC-${tf}-${bucketOf(tf)}`])) as Record<Tf, string>;

interface Plan {
  ref: Reference;
  /**
   * The live close: opens at the last close and closes 0.1% above the highest unbroken swing
   * high of the 1h, 4h and 1d series, so each of the three closes above its swing high.
   */
  breaker: Candle;
  afterBreak: Reference;
}

function plan(history: Candle[]): Plan {
  const ref = reference(history);
  const last = history[history.length - 1]!;
  const close = 1.001 * Math.max(...TFS.map((tf) => ref.states[tf].swingHigh!));
  const breaker: Candle = {
    openTime: BREAKER_OPEN,
    open: last.close,
    high: close,
    low: last.close,
    close,
    volume: 123,
  };
  return { ref, breaker, afterBreak: reference([...history, breaker]) };
}

const all = realCandlesAvailable ? loadRealCandles("BTC")! : [];
const cut = all.findIndex((c) => c.openTime === LAST_OPEN);
/** A: the file's first three years and a month. */
const planA = realCandlesAvailable ? plan(all.slice(0, cut + 1)) : null;
/** B: the last 18 months of the same history. */
const planB = realCandlesAvailable ? plan(all.slice(cut + 1 - 540 * 24, cut + 1)) : null;

// ---- a scenario: server, members, fake Telegram ---------------------------------------------

interface Scenario {
  telegram: FakeTelegram;
  clock: TestClock;
  db: TestDb;
  server: TestServer;
  /** chat id → the member's API key. */
  keys: Record<string, string>;
  plan: Plan;
}

const ENV = (telegram: FakeTelegram) => ({
  TELEGRAM_API_BASE: telegram.apiBase,
  TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
  ALERT_RETRY_BASE_MS: "20",
  ALERT_RETRY_MAX_MS: "200",
});

async function startScenario(clockAt: number, plan: Plan): Promise<Scenario> {
  const telegram = await startFakeTelegram();
  const clock = createTestClock(clockAt);
  const db = await createTestDb();
  const server = await startTestServer({ feed: true, clock, db, env: ENV(telegram) });
  const keys: Record<string, string> = {};
  // 1001 follows BTC on 1h, 4h and 1d; 1002 follows ETH and BTC on 4h only; 1003 follows ETH
  // only; 1004 follows BTC on every timeframe but its subscription has ended.
  const members = [
    { chatId: "1001", symbols: ["BTC"], timeframes: ["1h", "4h", "1d"] as Tf[], until: undefined },
    { chatId: "1002", symbols: ["ETH", "BTC"], timeframes: ["4h"] as Tf[], until: undefined },
    { chatId: "1003", symbols: ["ETH"], timeframes: ["1h", "4h", "1d"] as Tf[], until: undefined },
    { chatId: "1004", symbols: ["BTC"], timeframes: ["1h", "4h", "1d"] as Tf[], until: new Date(clockAt - 24 * H) },
  ];
  for (const m of members) {
    const { accountId, apiKey } = await server.account(m.until ? { subscriptionUntil: m.until } : {});
    expect(
      await saveAlertSettings(db.handle, accountId, { chatId: m.chatId, symbols: m.symbols, timeframes: m.timeframes }),
    ).toBe(true);
    keys[m.chatId] = apiKey;
  }
  return { telegram, clock, db, server, keys, plan };
}

async function stopScenario(s: Scenario | undefined, alreadyClosed = false): Promise<void> {
  if (!s) return;
  if (!alreadyClosed) await s.server.close();
  await s.db.drop();
  await s.telegram.close();
}

/** Stored events, sorted by id (in JavaScript: the database's collation may differ). */
async function eventRows(db: DbHandle) {
  const rows = await db.db
    .select({ id: signalEvents.id, tf: signalEvents.tf, signal: signalEvents.signal, live: signalEvents.live })
    .from(signalEvents);
  return rows.sort((a, b) => a.id.localeCompare(b.id));
}

async function outboxRows(db: DbHandle) {
  return db.db
    .select({ chatId: outbox.chatId, eventId: outbox.eventId, sent: sql<boolean>`${outbox.sentAt} IS NOT NULL` })
    .from(outbox)
    .orderBy(asc(outbox.id));
}

/**
 * The outbox has nothing pending (so every row it holds was answered by the fake before being
 * marked sent), and no request arrives during `graceMs` after that.
 */
async function settle(s: Scenario, graceMs = 300): Promise<void> {
  expect(await waitForOutboxIdle(s.db.handle, EVENT_WAIT_MS)).toBe(true);
  const seen = s.telegram.received.length;
  await new Promise((r) => setTimeout(r, graceMs));
  expect(s.telegram.received.length).toBe(seen);
}

/** History stored, nothing alerted: the state every backfill must leave. */
async function expectSilentHistory(s: Scenario): Promise<void> {
  await settle(s);
  const rows = await eventRows(s.db.handle);
  expect(rows.length).toBeGreaterThan(1_000);
  expect(rows).toEqual(s.plan.ref.events);
  expect(await outboxRows(s.db.handle)).toEqual([]);
  expect(s.telegram.received).toEqual([]);
}

/** Pushes the live close (clock 5 s after it) and checks exactly the expected alerts. */
async function expectLiveBreakAlerts(s: Scenario): Promise<void> {
  const { ref, breaker, afterBreak } = s.plan;
  s.clock.set(BREAKER_OPEN + H + 5_000);
  expect(await push(createClient(IngestService, internalTransport(s.server)), [breaker])).toEqual({
    accepted: 1,
    rejected: 0,
    duplicates: 0,
  });
  await s.telegram.waitForDelivered(4);
  await settle(s);
  const got = s.telegram.received.map((m) => `${m.chatId} ${m.eventId}`).sort();
  expect(got).toEqual([
    `1001 ${breakIds["1d"]}`,
    `1001 ${breakIds["1h"]}`,
    `1001 ${breakIds["4h"]}`,
    `1002 ${breakIds["4h"]}`,
  ]);
  expect(s.telegram.delivered).toHaveLength(4);
  // The three new events are live, and all that is new; the outbox rows are sent.
  const rows = await eventRows(s.db.handle);
  expect(rows.filter((r) => r.live)).toEqual(
    TFS.map((tf) => ({ id: breakIds[tf], tf, signal: afterBreak.states[tf].signal, live: true })).sort((a, b) =>
      a.id.localeCompare(b.id),
    ),
  );
  expect(rows).toHaveLength(ref.events.length + 3);
  expect((await outboxRows(s.db.handle)).map((r) => `${r.chatId} ${r.eventId} ${r.sent}`).sort()).toEqual(
    got.map((g) => `${g} true`),
  );
  await expectApiSignalIds(s);
}

/** The API answers each timeframe with the signal of the break and its event id as signal_id. */
async function expectApiSignalIds(s: Scenario): Promise<void> {
  const { breaker, afterBreak } = s.plan;
  for (const tf of TFS) {
    const res = await fetch(`${s.server.baseUrl}/api/v1/signals?symbols=BTC&tf=${tf}`, {
      headers: { "x-api-key": s.keys["1001"]! },
    });
    const body = (await res.json()) as { signals: Array<Record<string, unknown>> };
    expect(res.status, JSON.stringify(body)).toBe(200);
    const reading = readClosed(afterBreak.states[tf])!;
    expect(body.signals[0], tf).toMatchObject({
      symbol: "BTC",
      tf,
      ok: true,
      signal: reading.signal,
      confirmed: true,
      defense: reading.defense,
      price: breaker.close,
      signal_id: breakIds[tf],
    });
  }
}

/** The feeder resends the last two history candles and the break: duplicates, no alert. */
async function expectResendSilent(s: Scenario): Promise<void> {
  const before = { events: (await eventRows(s.db.handle)).length, received: s.telegram.received.length };
  const resend = [...s.plan.ref.history.slice(-2), s.plan.breaker];
  expect(await push(createClient(IngestService, internalTransport(s.server)), resend)).toEqual({
    accepted: 0,
    rejected: 0,
    duplicates: 3,
  });
  await settle(s);
  expect({ events: (await eventRows(s.db.handle)).length, received: s.telegram.received.length }).toEqual(before);
  expect(await outboxRows(s.db.handle)).toHaveLength(4);
}

// ---- the tests ----------------------------------------------------------------------------

describe.runIf(realCandlesAvailable)("history never alerts (three years of real BTC 1h candles)", () => {
  it("the premise: no gaps; the last candle changes the 1h signal; the break changes 1h, 4h and 1d", () => {
    expect(planA!.ref.history.length).toBeGreaterThan(3 * 365 * 24);
    expect(planB!.ref.history.length).toBe(540 * 24);
    for (const { ref, breaker, afterBreak } of [planA!, planB!]) {
      const history = ref.history;
      expect(history.every((c, i) => i === 0 || c.openTime - history[i - 1]!.openTime === H)).toBe(true);
      // The last candle itself changes the 1h signal: taken as live 5 s after its close, it would alert.
      expect(ref.states["1h"].signalAt).toBe(LAST_OPEN);
      for (const tf of TFS) {
        expect(ref.states[tf].swingHighBroken, tf).toBe(false);
        expect(afterBreak.states[tf].signalAt, tf).toBe(bucketOf(tf));
        expect(afterBreak.states[tf].signal, tf).toMatch(/LONG/);
      }
      expect(breaker.close / history[history.length - 1]!.close).toBeLessThan(1.02);
      expect(afterBreak.events).toHaveLength(ref.events.length + 3);
    }
  });

  describe("A: imported with the CLI's import (x-ingest-mode: backfill), the clock 5 s after the last close", () => {
    let s: Scenario;
    let restarted: TestServer | null = null;
    let dir: string;
    let serverClosed = false;

    beforeAll(async () => {
      s = await startScenario(LAST_OPEN + H + 5_000, planA!);
      // The CLI imports files: the shared file's first three years, in a temporary file outside the project.
      dir = mkdtempSync(path.join(tmpdir(), "signals-backfill-"));
      const lines = gunzipSync(readFileSync(BTC_FILE)).toString("utf8").split("\n");
      writeFileSync(path.join(dir, "btc.csv"), `${lines.slice(0, cut + 2).join("\n")}\n`);
    });
    afterAll(async () => {
      await restarted?.close();
      await stopScenario(s, serverClosed);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("stores thousands of events with live=false and sends nothing", async () => {
      const result = await importCandles(internalTransport(s.server), path.join(dir, "btc.csv"), "BTC", "1h");
      expect(result).toMatchObject({ symbol: "BTC", accepted: cut + 1, rejected: 0, duplicates: 0 });
      await expectSilentHistory(s);
    });

    it(
      "the next live close that changes the signal sends one message per " +
        "subscribed timeframe that changed, with the API's signal_id",
      async () => {
        await expectLiveBreakAlerts(s);
      },
    );

    it("the feeder resending the same candles alerts nothing more", async () => {
      await expectResendSilent(s);
    });

    it(
      "a restart over the same database re-alerts nothing, answers " + "the same signal_id, and ignores the resend too",
      async () => {
        serverClosed = true;
        await s.server.close();
        restarted = await startTestServer({ feed: true, clock: s.clock, db: s.db, env: ENV(s.telegram) });
        const again: Scenario = { ...s, server: restarted };
        // The new worker claims at start and then at least every second: give it two rounds.
        await settle(again, 1_500);
        expect(s.telegram.received).toHaveLength(4);
        await expectApiSignalIds(again);
        await expectResendSilent(again);
        expect(s.telegram.received).toHaveLength(4);
      },
    );
  });

  describe("B: the last 18 months pushed live (no ingest mode), the clock 10 minutes after the last close", () => {
    let s: Scenario;

    beforeAll(async () => {
      s = await startScenario(LAST_OPEN + H + 600_000, planB!);
    });
    afterAll(async () => {
      await stopScenario(s);
    });

    it("stores thousands of events with live=false and sends nothing", async () => {
      expect(await push(createClient(IngestService, internalTransport(s.server)), s.plan.ref.history)).toEqual({
        accepted: 540 * 24,
        rejected: 0,
        duplicates: 0,
      });
      await expectSilentHistory(s);
    });

    it(
      "the same live push path alerts the next close that " + "changes the signal, once per subscribed timeframe",
      async () => {
        await expectLiveBreakAlerts(s);
        await expectResendSilent(s);
      },
    );
  });
});
