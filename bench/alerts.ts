/**
 * Alerts end to end: a real server process on Postgres with a fake Telegram Bot API (a real
 * HTTP server in this process), 100 members each following all 50 coins on 1h, 4h and 1d, and
 * one feeder holding a single long-lived PushCandles stream, as a production feeder does.
 *
 *   npm run bench -- alerts        (or: node bench/alerts.ts; needs PostgreSQL at
 *                                   BENCH_DATABASE_URL or 127.0.0.1:5432)
 *
 * Every coin is a seeded synthetic walk (the demo feed's generator) with 200 hours of history
 * sent as a backfill (not measured), then 150 hourly closes that end at the current hour. The
 * server runs with ALERT_MAX_DELAY = 7 days so those closes count as real time (that setting only
 * decides which closes alert; the path of an alert is the same).
 *
 *  - paced: 60 rounds, each the top of an hour: one closing candle per coin sent back to back,
 *    then wait until every alert of the round is delivered, then 200 ms of quiet. Latency of
 *    every alert from the moment its closing candle was sent to the moment the fake Telegram
 *    received it; latency of every event to a consumer of the internal event stream.
 *  - flood: the other 90 rounds sent as fast as the stream takes them. Events per second from
 *    the first candle sent to the last outbox row committed (polled every 5 ms) and to the last
 *    event on the internal stream; messages per second to the last delivery.
 *
 * Baselines in the same run: the same number of outbox rows inserted bare from one connection,
 * one transaction per event of 100 rows (the database's floor for "commit an event's alerts");
 * and sequential sendMessage POSTs to the fake (the floor of one delivery).
 */
import { create } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import postgres from "postgres";
import { SignalEventsService } from "../gen/signals/v1/events_pb.js";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../gen/signals/v1/ingest_pb.js";
import { createAccount } from "../src/accounts/accounts.ts";
import { saveAlertSettings } from "../src/alerts/settings.ts";
import { loadConfig } from "../src/config.ts";
import { openDb } from "../src/db/client.ts";
import type { Candle } from "../src/engine/index.ts";
import { type CandleRow, CoinRuntime } from "../src/market/coin-runtime.ts";
import { demoCandles } from "../src/market/demo-feed.ts";
import type { SignalChange } from "../src/market/signal-events.ts";
import { FAKE_BOT_TOKEN, startFakeTelegram } from "../test/support/fake-telegram.ts";
import { machineLine } from "./api.ts";
import { bearer, benchDatabase, startServerProcess } from "./server-process.ts";

const H = 3_600_000;
const TOKEN = "bench-internal-token-0123456789";
const MEMBERS = 100;
const COINS = 50;
const HISTORY_HOURS = 200;
const LIVE_HOURS = 150;
const PACED_ROUNDS = 60;
const QUIET_MS = 200;

interface Round {
  candles: { symbol: string; candle: Candle }[];
  /** Events the round's closes cause (computed with the server's own CoinRuntime). */
  events: SignalChange[];
}

/** Percentile (nearest rank) of sorted values. */
function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(values: number[]): { n: number; p50: number; p95: number; p99: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: pct(s, 50), p95: pct(s, 95), p99: pct(s, 99), max: s[s.length - 1] ?? NaN };
}

const ms = (v: number) => `${v.toFixed(0)} ms`;

/** A feeder's long-lived client stream: push() queues candles, end() finishes the call. */
function openFeeder(client: Client<typeof IngestService>) {
  const queue: PushCandlesRequest[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  /** Send time (ms) of each closing candle, by "SYMBOL/openTime". */
  const sentAt = new Map<string, number>();
  async function* requests(): AsyncGenerator<PushCandlesRequest> {
    for (;;) {
      while (queue.length > 0) {
        const next = queue.shift()!;
        // The moment the candle leaves the feeder: handed to the HTTP/2 stream.
        sentAt.set(`${next.symbol}/${next.openTime}`, Date.now());
        yield next;
      }
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  }
  const done = client.pushCandles(requests());
  return {
    sentAt,
    push(candles: { symbol: string; candle: Candle }[]) {
      for (const { symbol, candle } of candles)
        queue.push(
          create(PushCandlesRequestSchema, {
            symbol,
            tf: "1h",
            ...candle,
            openTime: BigInt(candle.openTime),
            closed: true,
          }),
        );
      wake?.();
    },
    async end() {
      ended = true;
      wake?.();
      return done;
    },
  };
}

/** Builds the coins' candles and the events each live round causes. */
function buildMarket(lastOpen: number): { history: { symbol: string; candle: Candle }[]; rounds: Round[] } {
  const firstLive = lastOpen - (LIVE_HOURS - 1) * H;
  const firstHistory = firstLive - HISTORY_HOURS * H;
  const symbols = Array.from({ length: COINS }, (_, i) => `B${String(i).padStart(2, "0")}`);
  const series = symbols.map((symbol) => ({
    symbol,
    candles: demoCandles(symbol, HISTORY_HOURS + LIVE_HOURS).map((c, i) => ({ ...c, openTime: firstHistory + i * H })),
  }));
  const history: { symbol: string; candle: Candle }[] = [];
  for (let i = 0; i < HISTORY_HOURS; i++)
    for (const s of series) history.push({ symbol: s.symbol, candle: s.candles[i]! });
  const runtimes = new Map(symbols.map((symbol) => [symbol, new CoinRuntime(symbol, "1h", 0)]));
  const apply = (symbol: string, candle: Candle, changes: SignalChange[]) => {
    const rows: CandleRow[] = [];
    runtimes.get(symbol)!.apply({ symbol, tf: "1h", ...candle, closed: true }, rows, changes);
  };
  for (const { symbol, candle } of history) apply(symbol, candle, []);
  const rounds: Round[] = [];
  for (let r = 0; r < LIVE_HOURS; r++) {
    const candles = series.map((s) => ({ symbol: s.symbol, candle: s.candles[HISTORY_HOURS + r]! }));
    const events: SignalChange[] = [];
    for (const { symbol, candle } of candles) apply(symbol, candle, events);
    rounds.push({ candles, events });
  }
  return { history, rounds };
}

async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 2,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return Date.now();
}

/** Runs the alerts benchmark; returns a Markdown table. */
export async function benchAlerts(): Promise<string> {
  const database = await benchDatabase();
  const telegram = await startFakeTelegram();
  const sql = postgres(database.url, { max: 2, onnotice: () => {} });
  const progress = (what: string) => process.stderr.write(`alerts bench: ${what}\n`);
  progress("starting the server");
  const server = await startServerProcess({
    DATABASE_URL: database.url,
    INTERNAL_TOKEN: TOKEN,
    TELEGRAM_API_BASE: telegram.apiBase,
    TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
    ALERT_MAX_DELAY: String(7 * 24 * 3600),
    LOG_LEVEL: "info",
    // e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to see where the server's time goes.
    ...(process.env.BENCH_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS } : {}),
    ...(process.env.BENCH_DB_POOL_SIZE ? { DB_POOL_SIZE: process.env.BENCH_DB_POOL_SIZE } : {}),
  }).catch(async (err: unknown) => {
    await sql.end();
    await telegram.close();
    await database.drop();
    throw err;
  });
  const sessions: Http2SessionManager[] = [];
  try {
    const internalUrl = `http://127.0.0.1:${server.internalPort}`;
    const auth = bearer(TOKEN);
    const transport = () => {
      const sessionManager = new Http2SessionManager(internalUrl);
      sessions.push(sessionManager);
      return createGrpcTransport({ baseUrl: internalUrl, sessionManager, interceptors: [auth] });
    };

    // ---- setup (not measured) ----
    progress("setup: members and history");
    const lastOpen = Math.floor(Date.now() / H) * H - H;
    const { history, rounds } = buildMarket(lastOpen);
    const symbols = [...new Set(history.map((h) => h.symbol))];
    const handle = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: 2 });
    const limits = loadConfig({}).limits;
    for (let i = 0; i < MEMBERS; i++) {
      const { summary: account } = await createAccount(
        handle,
        { email: `alerts${i}@example.test`, plan: "node", subscriptionUntil: new Date("2099-01-01T00:00:00Z") },
        limits,
        Date.now(),
      );
      await saveAlertSettings(handle, account.accountId, {
        chatId: String(100_000 + i),
        symbols,
        timeframes: ["1h", "4h", "1d"],
      });
    }
    await handle.close();
    const ingest = createClient(IngestService, transport());
    async function* historyRequests() {
      for (const { symbol, candle } of history)
        yield create(PushCandlesRequestSchema, {
          symbol,
          tf: "1h",
          ...candle,
          openTime: BigInt(candle.openTime),
          closed: true,
        });
    }
    const seeded = await ingest.pushCandles(historyRequests(), { headers: { "x-ingest-mode": "backfill" } });
    if (Number(seeded.accepted) !== history.length)
      throw new Error(`history: ${seeded.accepted} of ${history.length} accepted`);
    const { n: historyEvents } = (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM signal_events`)[0]!;
    const { n: outboxAfterHistory } = (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox`)[0]!;
    if (outboxAfterHistory !== 0) throw new Error(`the backfill queued ${outboxAfterHistory} alerts`);

    // ---- baselines ----
    progress("baselines");
    const paced = rounds.slice(0, PACED_ROUNDS);
    const flood = rounds.slice(PACED_ROUNDS);
    const floodEvents = flood.reduce((n, r) => n + r.events.length, 0);
    await sql.unsafe("CREATE TABLE bench_outbox (LIKE outbox INCLUDING ALL)");
    const insertStarted = performance.now();
    for (let e = 0; e < floodEvents; e++) {
      await sql`INSERT INTO bench_outbox (kind, account_id, chat_id, event_id)
                SELECT 'signal_alert', g, (100000 + g)::text, ${`X-1h-${e}`} FROM generate_series(1, ${MEMBERS}) g`;
    }
    const bareInsertSeconds = (performance.now() - insertStarted) / 1000;
    const postLatencies: number[] = [];
    const url = `${telegram.apiBase}/bot${FAKE_BOT_TOKEN}/sendMessage`;
    for (let i = 0; i < 500; i++) {
      const t = performance.now();
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat_id: "1", text: "baseline ".repeat(30), disable_web_page_preview: true }),
      });
      await res.json();
      postLatencies.push(performance.now() - t);
    }
    // The two halves of one delivery at the worker's concurrency (16 lanes): a POST to the
    // fake, and the acknowledgement (a one-row UPDATE, its own commit) over a pool of 10
    // connections as in the server; and the same acknowledgements 100 rows per statement.
    const LANES = 16;
    const PER_LANE = 300;
    const lanes = async (work: (lane: number, i: number) => Promise<unknown>) => {
      const t = performance.now();
      await Promise.all(
        Array.from({ length: LANES }, async (_, lane) => {
          for (let i = 0; i < PER_LANE; i++) await work(lane, i);
        }),
      );
      return (LANES * PER_LANE) / ((performance.now() - t) / 1000);
    };
    const postRate = await lanes(async (lane) => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat_id: String(lane), text: "baseline ".repeat(30), disable_web_page_preview: true }),
      });
      await res.json();
    });
    const pool = postgres(database.url, { max: 10, onnotice: () => {} });
    const ackRate = await lanes(
      (lane, i) =>
        pool`UPDATE bench_outbox SET sent_at = now(), lease_until = NULL WHERE id = ${lane * PER_LANE + i + 1}`,
    );
    const batchedAckStarted = performance.now();
    for (let first = 1; first <= LANES * PER_LANE; first += 100) {
      await pool`UPDATE bench_outbox SET sent_at = now(), lease_until = NULL
        WHERE id = ANY(${Array.from({ length: 100 }, (_, k) => first + k)}::bigint[])`;
    }
    const batchedAckRate = (LANES * PER_LANE) / ((performance.now() - batchedAckStarted) / 1000);
    await pool.end();
    telegram.delivered.length = 0;
    telegram.received.length = 0;

    // ---- the internal stream consumer ----
    const streamed = new Map<string, number>();
    const streamAbort = new AbortController();
    const consumer = (async () => {
      try {
        for await (const res of createClient(SignalEventsService, transport()).streamSignalEvents(
          {},
          { signal: streamAbort.signal },
        ))
          streamed.set(res.event!.id, Date.now());
      } catch (err) {
        if (!streamAbort.signal.aborted) throw err;
      }
    })();
    await new Promise((r) => setTimeout(r, 300));

    const feeder = openFeeder(ingest);
    /** Event id → "SYMBOL/openTime" of the closing candle that caused it. */
    const trigger = new Map<string, string>();
    for (const round of rounds) {
      for (const e of round.events) {
        const candle = round.candles.find((c) => c.symbol === e.symbol)!;
        trigger.set(e.id, `${e.symbol}/${candle.candle.openTime}`);
      }
    }
    const latencyOf = (eventId: string, at: number) => at - feeder.sentAt.get(trigger.get(eventId)!)!;

    // ---- paced rounds ----
    progress(`paced: ${PACED_ROUNDS} rounds`);
    let expectedMessages = 0;
    const roundWall: number[] = [];
    for (const round of paced) {
      const t = Date.now();
      feeder.push(round.candles);
      expectedMessages += round.events.length * MEMBERS;
      await waitUntil(
        () => telegram.delivered.length >= expectedMessages,
        60_000,
        `round alerts (${telegram.delivered.length}/${expectedMessages})`,
      );
      await waitUntil(() => round.events.every((e) => streamed.has(e.id)), 30_000, "round events on the stream");
      if (round.events.length > 0) roundWall.push(Date.now() - t);
      await new Promise((r) => setTimeout(r, QUIET_MS));
    }
    const pacedMessages = telegram.delivered.slice();
    const pacedEvents = paced.flatMap((r) => r.events);
    const pacedAlertLatency = summary(pacedMessages.map((m) => latencyOf(m.eventId!, m.at)));
    const pacedStreamLatency = summary(pacedEvents.map((e) => latencyOf(e.id, streamed.get(e.id)!)));
    // Where the time goes, per paced event (all on this host's clock): the flush transaction's
    // start (signal_events.created_at is now() of that transaction), the event on the stream
    // (commit + NOTIFY + read), its first and last alert at the fake; per alert, the outbox
    // row's ack (sent_at) after the fake's receipt.
    const pacedIds = pacedEvents.map((e) => e.id);
    const stamps = new Map(
      (
        await sql<
          { id: string; created: number }[]
        >`SELECT id, (extract(epoch FROM created_at) * 1000)::float8 AS created FROM signal_events
          WHERE id = ANY(${pacedIds})`
      ).map((r) => [r.id, Number(r.created)]),
    );
    const firstAlert = new Map<string, number>();
    const lastAlert = new Map<string, number>();
    for (const m of pacedMessages) {
      firstAlert.set(m.eventId!, Math.min(firstAlert.get(m.eventId!) ?? Infinity, m.at));
      lastAlert.set(m.eventId!, Math.max(lastAlert.get(m.eventId!) ?? -Infinity, m.at));
    }
    const stage = {
      toFlush: summary(pacedEvents.map((e) => latencyOf(e.id, stamps.get(e.id)!))),
      flushToStream: summary(pacedEvents.map((e) => streamed.get(e.id)! - stamps.get(e.id)!)),
      streamToFirstAlert: summary(pacedEvents.map((e) => firstAlert.get(e.id)! - streamed.get(e.id)!)),
      firstToLastAlert: summary(pacedEvents.map((e) => lastAlert.get(e.id)! - firstAlert.get(e.id)!)),
      roundDrain: summary(
        paced
          .filter((r) => r.events.length > 0)
          .map(
            (r) =>
              Math.max(...r.events.map((e) => lastAlert.get(e.id)!)) -
              Math.min(...r.events.map((e) => firstAlert.get(e.id)!)),
          ),
      ),
    };
    const roundRate = paced
      .filter((r) => r.events.length > 0)
      .map(
        (r) =>
          ((r.events.length * MEMBERS) /
            Math.max(
              1,
              Math.max(...r.events.map((e) => lastAlert.get(e.id)!)) -
                Math.min(...r.events.map((e) => firstAlert.get(e.id)!)),
            )) *
          1000,
      );
    const deliveryRate = summary(roundRate);
    // Rounds in which exactly one close changed one signal: one event, exactly 100 alerts.
    const singles = paced.filter((r) => r.events.length === 1).map((r) => r.events[0]!.id);
    const singleLatency = summary(
      pacedMessages.filter((m) => singles.includes(m.eventId!)).map((m) => latencyOf(m.eventId!, m.at)),
    );
    const perRound = paced.map((r) => r.events.length).filter((n) => n > 0);

    // ---- flood ----
    progress(`flood: ${LIVE_HOURS - PACED_ROUNDS} rounds at once`);
    const { n: outboxBefore } = (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox`)[0]!;
    const floodStarted = Date.now();
    for (const round of flood) feeder.push(round.candles);
    const outboxDone = await waitUntil(
      async () =>
        (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM outbox`)[0]!.n >=
        outboxBefore + floodEvents * MEMBERS,
      120_000,
      "the flood's outbox rows",
      5,
    );
    const floodEventIds = flood.flatMap((r) => r.events.map((e) => e.id));
    const streamDone = await waitUntil(
      () => floodEventIds.every((id) => streamed.has(id)),
      120_000,
      "the flood's events on the stream",
    );
    const totalMessages = expectedMessages + floodEvents * MEMBERS;
    await waitUntil(
      () => telegram.delivered.length >= totalMessages,
      300_000,
      `the flood's alerts (${telegram.delivered.length}/${totalMessages})`,
      20,
    );
    const floodMessages = telegram.delivered.slice(pacedMessages.length);
    const deliveredDone = Math.max(...floodMessages.map((m) => m.at));
    const floodAlertLatency = summary(floodMessages.map((m) => latencyOf(m.eventId!, m.at)));
    const pushed = await feeder.end();
    streamAbort.abort();
    await consumer;

    // ---- checks: everything exactly once ----
    const { n: events } = (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM signal_events WHERE live`)[0]!;
    const { n: rows, sent } = (
      await sql<{ n: number; sent: number }[]>`SELECT count(*)::int AS n, count(sent_at)::int AS sent FROM outbox`
    )[0]!;
    const allEvents = rounds.reduce((n, r) => n + r.events.length, 0);
    const distinct = new Set(telegram.delivered.map((m) => `${m.chatId} ${m.eventId}`)).size;
    const problems = [
      Number(pushed.accepted) !== LIVE_HOURS * COINS
        ? `accepted ${pushed.accepted} of ${LIVE_HOURS * COINS} live candles`
        : "",
      events !== allEvents ? `${events} live events stored, expected ${allEvents}` : "",
      rows !== allEvents * MEMBERS || sent !== rows
        ? `outbox ${rows} rows (${sent} sent), expected ${allEvents * MEMBERS}`
        : "",
      telegram.received.length !== allEvents * MEMBERS || distinct !== allEvents * MEMBERS
        ? `fake received ${telegram.received.length} (${distinct} distinct), expected ${allEvents * MEMBERS}`
        : "",
    ].filter(Boolean);

    const floodSeconds = (n: number) => (n - floodStarted) / 1000;
    const post = summary(postLatencies);
    const row = (measure: string, value = "", target = "") => `| ${measure} | ${value} | ${target} |`;
    const p50p95p99max = (l: { p50: number; p95: number; p99: number; max: number }) =>
      `${ms(l.p50)} / ${ms(l.p95)} / **${ms(l.p99)}** / ${ms(l.max)}`;
    const p50p99 = (l: { p50: number; p99: number }) => `${ms(l.p50)} / ${ms(l.p99)}`;
    const perSecond = (n: number, seconds: number) => (n / seconds).toFixed(0);
    const outboxSeconds = floodSeconds(outboxDone);
    const streamSeconds = floodSeconds(streamDone);
    const deliveredSeconds = floodSeconds(deliveredDone);
    const lines = [
      `Setup: ${COINS} coins, ${MEMBERS} members each following all ${COINS} coins on 1h, 4h and 1d; ` +
        `${history.length} history candles as a backfill (${historyEvents} events, 0 alerts); ` +
        `${LIVE_HOURS * COINS} live closes, ${allEvents} signal events, ${allEvents * MEMBERS} alerts.`,
      "",
      `| measure | value | target / baseline |`,
      `|---|---|---|`,
      row(
        `**paced** (${PACED_ROUNDS} top-of-hour rounds, ${pacedEvents.length} events in ${perRound.length} rounds, ` +
          `${Math.min(...perRound)}–${Math.max(...perRound)} per round, ${pacedMessages.length} alerts)`,
      ),
      row(
        "closing candle sent → alert received by the fake Telegram, p50 / p95 / p99 / max",
        p50p95p99max(pacedAlertLatency),
        "p99 < 250 ms",
      ),
      row(
        `the same, rounds with a single event (${singles.length} rounds, 100 alerts each), p50 / p95 / p99 / max`,
        p50p95p99max(singleLatency),
        "p99 < 250 ms",
      ),
      row(
        "closing candle sent → event on the internal stream, p50 / p95 / p99",
        `${ms(pacedStreamLatency.p50)} / ${ms(pacedStreamLatency.p95)} / ${ms(pacedStreamLatency.p99)}`,
      ),
      row("where it goes: candle sent → its flush transaction starts, p50 / p99", p50p99(stage.toFlush)),
      row(
        "where it goes: flush transaction start → event on the stream (commit, NOTIFY, read), p50 / p99",
        p50p99(stage.flushToStream),
      ),
      row(
        "where it goes: event on the stream → its first alert at the fake, p50 / p99",
        p50p99(stage.streamToFirstAlert),
      ),
      row("where it goes: first → last alert of one event (100 members), p50 / p99", p50p99(stage.firstToLastAlert)),
      row(
        "where it goes: a round's first → last alert, p50 / max; delivery rate within a round, p50",
        `${ms(stage.roundDrain.p50)} / ${ms(stage.roundDrain.max)}; ${deliveryRate.p50.toFixed(0)} messages/s`,
      ),
      row(
        "plain sendMessage POST to the fake (500 sequential), p50 / p95 / p99",
        `${post.p50.toFixed(2)} / ${post.p95.toFixed(2)} / ${post.p99.toFixed(2)} ms`,
        "baseline of one delivery",
      ),
      row(
        `**flood** (${flood.length} rounds = ${flood.length * COINS} closes sent at once, ${floodEvents} events, ` +
          `${floodEvents * MEMBERS} alerts)`,
      ),
      row(
        "(a) events/s, first candle sent → last outbox row committed",
        `${perSecond(floodEvents, outboxSeconds)} events/s ` +
          `(${perSecond(floodEvents * MEMBERS, outboxSeconds)} rows/s, ${outboxSeconds.toFixed(2)} s)`,
      ),
      row(
        `bare INSERT of the same rows, one transaction per event of ${MEMBERS} rows, one connection`,
        `${perSecond(floodEvents, bareInsertSeconds)} events/s ` +
          `(${perSecond(floodEvents * MEMBERS, bareInsertSeconds)} rows/s)`,
        "baseline of (a)",
      ),
      row(
        "(b) events/s, first candle sent → last event on the internal stream",
        `${perSecond(floodEvents, streamSeconds)} events/s (${streamSeconds.toFixed(2)} s)`,
      ),
      row(
        "alerts delivered/s, first candle sent → last alert received",
        `${perSecond(floodMessages.length, deliveredSeconds)} messages/s (${deliveredSeconds.toFixed(2)} s)`,
      ),
      row(
        `baseline: sendMessage POSTs to the fake, ${16} concurrent`,
        `${postRate.toFixed(0)} /s`,
        "ceiling of delivery (HTTP half)",
      ),
      row(
        "baseline: one-row ack UPDATEs (own commit each), 16 concurrent over 10 connections",
        `${ackRate.toFixed(0)} /s`,
        "ceiling of delivery (ack half)",
      ),
      row("baseline: the same acks, 100 rows per UPDATE, one connection", `${batchedAckRate.toFixed(0)} rows/s`),
      row(
        "(c) under the flood: closing candle sent → alert received, p50 / p99",
        p50p99(floodAlertLatency),
        "(queueing)",
      ),
      row(
        "every event stored once, every alert sent once (outbox, fake)",
        problems.length === 0 ? "yes" : problems.join("; "),
        "exactly once",
      ),
    ];
    return lines.join("\n");
  } finally {
    for (const s of sessions) s.abort();
    server.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1000));
    await sql.end();
    await telegram.close();
    await database.drop();
  }
}

if (import.meta.main) {
  console.log(machineLine());
  console.log(await benchAlerts());
}
