/**
 * `signals feed` end to end against a local fake Binance (real HTTP + websocket on loopback,
 * real candles re-timed to end now) and a real server: the real ccxt client, the real
 * internal listener. Each scenario ends by checking that the service stored exactly the
 * exchange's closed candles (no gap, no duplicate) and that the API's entries equal the
 * engine run directly on those candles.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseFeedConfig } from "../../src/config/feeder.ts";
import { type Candle, cloneState, readForming, runSeries } from "../../src/engine/index.ts";
import { type Feeder, startFeeder } from "../../src/feeder/feeder.ts";
import { createServerClient } from "../../src/feeder/server-client.ts";
import { readCandles } from "../../src/market/store.ts";
import { apiJson } from "../support/api-request.ts";
import { type FakeExchange, startFakeExchange } from "../support/fake-exchange.ts";
import { childEnv, NODE_BIN, PROJECT_ROOT, runCli } from "../support/processes.ts";
import { loadRealCandles, type RealCoin, realCandlesAvailable } from "../support/real-candles.ts";
import { referenceEntry } from "../support/reference-signal-id.ts";
import { waitFor as pollUntil } from "../support/reliability.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const H = 3_600_000;
const HISTORY = 120;
/** FEED_FAILOVER of the feeders whose leases must not change hands. */
const STEADY_FAILOVER_S = 60;
/** FEED_FAILOVER of the hot failover's feeders. */
const FAILOVER_S = 3;
const COINS: RealCoin[] = ["BTC", "ETH", "SOL", "XRP", "ADA", "DOGE", "LINK", "LTC"];

let fake: FakeExchange;
let server: TestServer;
let apiKey: string;
const feeders: Feeder[] = [];
const children: ChildProcess[] = [];
/** Where each coin's feeder started: its expected history begins HISTORY candles before. */
const firstExpected = new Map<string, number>();

const waitFor = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = EVENT_WAIT_MS) =>
  pollUntil(check, timeoutMs, what);

function feedEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    FEED_REST_URL: fake.restUrl,
    FEED_WS_URL: fake.wsUrl,
    FEED_SERVER: server.internalUrl,
    INTERNAL_TOKEN,
    FEED_TF: "1h",
    FEED_HISTORY: String(HISTORY),
    FEED_SILENCE: "2",
    // Leases (2/3 of it) outlast any stall of this process, which runs the server and the feeders: only the hot
    // failover below, whose subject it is, runs on a short one.
    FEED_FAILOVER: String(STEADY_FAILOVER_S),
    FEED_METRICS_PORT: "0",
    FEED_DATASETS: "candles",
    LOG_LEVEL: "silent",
    ...extra,
  };
}

async function feeder(symbols: string[], extra: Record<string, string> = {}): Promise<Feeder> {
  const config = parseFeedConfig(feedEnv(extra), ["--symbols", symbols.join(",")]);
  const f = await startFeeder({ config, token: INTERNAL_TOKEN, logger: pino({ level: "silent" }) });
  feeders.push(f);
  return f;
}

/** Moves the market on by one candle and keeps the server's clock with the exchange's. */
function closeCandles(bases?: string[]): void {
  fake.closeCandles(bases);
  server.clock.set(fake.now());
}

/** The closed candles the service must hold for `base`: the last HISTORY at the feeder's start, and every later one. */
function expectedClosed(base: string): Candle[] {
  const from = firstExpected.get(base)!;
  return fake.closed(base).filter((c) => c.openTime >= from);
}

async function storedClosed(base: string): Promise<Candle[]> {
  return (await readCandles(server.db.handle, base, "1h")).map(({ openTime, open, high, low, close, volume }) => ({
    openTime,
    open,
    high,
    low,
    close,
    volume,
  }));
}

async function caughtUp(base: string, withForming = true): Promise<void> {
  const want = expectedClosed(base);
  await waitFor(
    `${base} stored up to ${want.at(-1)!.openTime}`,
    async () =>
      (await storedClosed(base)).length === want.length &&
      (!withForming || (await apiPrice(base)) === fake.forming(base).close),
  );
}

async function signals(symbols: string[], tf = "1h"): Promise<Array<Record<string, unknown>>> {
  return (await apiJson(server.baseUrl, `/api/v1/signals?symbols=${symbols.join(",")}&tf=${tf}`, apiKey)).signals;
}

async function apiPrice(base: string): Promise<unknown> {
  return (await signals([base]))[0]?.price;
}

/** The entry the engine gives on the exchange's candles (closed history + the forming candle). */
function engineEntry(base: string): Record<string, unknown> {
  const state = runSeries(expectedClosed(base));
  const forming = fake.forming(base);
  return referenceEntry(base, "1h", state, readForming(cloneState(state), forming));
}

/** No gap, no duplicate, no candle the exchange did not close, and the API equals the engine. */
async function expectExact(bases: string[]): Promise<void> {
  for (const base of bases) {
    await caughtUp(base);
    expect(await storedClosed(base)).toEqual(expectedClosed(base));
  }
  expect(await signals(bases)).toEqual(bases.map(engineEntry));
}

/**
 * The fake only speaks when told to (a real market never pauses for 2 s): keep the coins talking until /healthz is 200.
 */
async function waitForHealthy(f: Feeder): Promise<void> {
  await waitFor("a healthy feeder", async () => {
    fake.tick(["BTC", "ETH"]);
    await new Promise((r) => setTimeout(r, 150));
    return (await fetch(`http://127.0.0.1:${f.metricsPort}/healthz`)).status === 200;
  });
}

function counter(f: Feeder, name: string, labels: Record<string, string>): Promise<number> {
  return f.metrics.registry
    .getSingleMetric(name)!
    .get()
    .then((m) =>
      m.values
        .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
        .reduce((s, v) => s + v.value, 0),
    );
}

describe.runIf(realCandlesAvailable)("signals feed against a fake Binance", () => {
  beforeAll(async () => {
    fake = await startFakeExchange({
      coins: COINS.map((base) => ({ base, candles: loadRealCandles(base)!.slice(-(HISTORY + 200)) })),
      interval: "1h",
      intervalMs: H,
      history: HISTORY + 20,
      futures: true,
    });
    server = await startTestServer({ feed: true, clock: createTestClock(fake.now()), env: { STALE_AFTER: "7200" } });
    ({ apiKey } = await server.account());
  });
  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    for (const f of feeders) await f.stop().catch(() => {});
    await server?.close();
    await fake?.close();
  });

  it(
    "cold start: backfills the last FEED_HISTORY candles, then streams; forming " +
      "updates are never stored as closed; an unlisted coin is skipped",
    async () => {
      for (const base of ["BTC", "ETH"]) firstExpected.set(base, fake.closed(base).at(-HISTORY)!.openTime);
      const f = await feeder(["BTC", "ETH", "NOPE"]);
      await expectExact(["BTC", "ETH"]);
      // The exchange has closed no candle since the start: the cold start's backfill is all there is.
      expect(await counter(f, "feed_backfilled_candles_total", { symbol: "BTC" })).toBe(HISTORY);
      expect(f.coins().find((c) => c.symbol === "NOPE")!.state).toBe("unlisted");
      // Forming updates stream; the stored history does not move until the exchange closes the candle.
      fake.tick(["BTC", "ETH"]);
      await waitFor("forming update", async () => (await apiPrice("BTC")) === fake.forming("BTC").close);
      expect((await storedClosed("BTC")).length).toBe(HISTORY);
      // The forming price may have come over REST: wait until both coins hear the stream (their
      // subscriptions go out in grouped, paced messages), so the closes below arrive on it.
      await waitFor("both streams live", () => {
        fake.tick(["BTC", "ETH"]);
        return f
          .coins()
          .filter((c) => c.symbol !== "NOPE")
          .every((c) => c.lastMessageAt !== null);
      });
      // The exchange closes candles over the stream (x:true): each one is stored once, at once.
      for (let i = 0; i < 3; i++) {
        closeCandles(["BTC", "ETH"]);
        fake.tick(["BTC", "ETH"]);
        await expectExact(["BTC", "ETH"]);
      }
      expect(await counter(f, "feed_push_duplicates_total", {})).toBe(0);
      // The closes came over the stream, unless the stream went silent for FEED_SILENCE (the fake
      // speaks only when the test ticks it, and a loaded machine can leave it quiet that long):
      // then the feeder resubscribed (a counted reconnect) and read the closes it missed over REST.
      const backfilled = await counter(f, "feed_backfilled_candles_total", { symbol: "BTC" });
      if ((await counter(f, "feed_reconnects_total", { symbol: "BTC" })) === 0) expect(backfilled).toBe(HISTORY);
      else expect(backfilled).toBeLessThanOrEqual(HISTORY + 3);
    },
  );

  it(
    "no closing update from the exchange: the candle is closed when " +
      "the next one begins, with its final values read over REST",
    async () => {
      const f = feeders[0]!;
      const before = await counter(f, "feed_backfilled_candles_total", { symbol: "BTC" });
      fake.withholdCloses("BTC", true);
      fake.tick(["BTC"]);
      await waitFor("forming update", async () => (await apiPrice("BTC")) === fake.forming("BTC").close);
      const stored = (await storedClosed("BTC")).length;
      closeCandles(["BTC", "ETH"]);
      fake.tick(["BTC", "ETH"]);
      await expectExact(["BTC", "ETH"]);
      expect((await storedClosed("BTC")).length).toBe(stored + 1);
      expect(await counter(f, "feed_backfilled_candles_total", { symbol: "BTC" })).toBe(before + 1);
      fake.withholdCloses("BTC", false);
    },
  );

  it("a dropped socket mid-candle: reconnects and backfills the candles closed meanwhile over REST", async () => {
    const f = feeders[0]!;
    fake.tick(["BTC"]);
    const before = await counter(f, "feed_reconnects_total", { symbol: "BTC" });
    const sockets = fake.connections();
    fake.dropSockets();
    closeCandles(["BTC", "ETH"]);
    closeCandles(["BTC", "ETH"]);
    await waitFor("reconnect", async () => (await counter(f, "feed_reconnects_total", { symbol: "BTC" })) > before);
    await waitFor("a new socket", () => fake.connections() > sockets);
    fake.tick(["BTC", "ETH"]);
    await expectExact(["BTC", "ETH"]);
    expect(await counter(f, "feed_push_duplicates_total", {})).toBe(0);
  });

  it(
    "a silent stream: resubscribed and backfilled after FEED_SILENCE; " +
      "the forming candle is never closed by the clock",
    async () => {
      const f = feeders[0]!;
      fake.silence("ETH", true);
      const before = await counter(f, "feed_reconnects_total", { symbol: "ETH" });
      const storedBefore = (await storedClosed("ETH")).length;
      await waitFor(
        "silence detected",
        async () => (await counter(f, "feed_reconnects_total", { symbol: "ETH" })) > before,
        6_000,
      );
      expect((await storedClosed("ETH")).length).toBe(storedBefore);
      // The feeder's /healthz fails while a coin it leads is stale.
      const unhealthy = await fetch(`http://127.0.0.1:${f.metricsPort}/healthz`);
      expect(unhealthy.status).toBe(503);
      expect(((await unhealthy.json()) as { stale: string[] }).stale).toContain("ETH");
      closeCandles(["ETH"]);
      fake.silence("ETH", false);
      fake.tick(["ETH"]);
      await expectExact(["ETH"]);
      await waitForHealthy(f);
    },
  );

  it("a 429 with Retry-After and a 5xx burst: backs off, never crashes, catches up", async () => {
    const f = feeders[0]!;
    fake.failRest({ status: 429, headers: { "retry-after": "1" } }, { status: 503 }, { status: 502 }, { status: 500 });
    fake.dropSockets();
    closeCandles(["BTC", "ETH"]);
    await waitFor("errors counted", async () => (await counter(f, "feed_exchange_errors_total", {})) >= 4);
    fake.tick(["BTC", "ETH"]);
    await expectExact(["BTC", "ETH"]);
    expect(await counter(f, "feed_exchange_errors_total", { kind: "rate_limit" })).toBeGreaterThanOrEqual(1);
    expect(await counter(f, "feed_exchange_errors_total", { kind: "unavailable" })).toBeGreaterThanOrEqual(1);
  });

  it("the audit finds a revised closed candle, counts and logs it, and never applies it", async () => {
    const f = feeders[0]!;
    const target = fake.closed("BTC").at(-3)!;
    const stored = (await storedClosed("BTC")).find((c) => c.openTime === target.openTime)!;
    fake.revise("BTC", target.openTime, {
      close: target.close * 1.0001,
      high: Math.max(target.high, target.close * 1.0001),
    });
    expect(await f.auditNow()).toBe(1);
    expect(await f.auditNow()).toBe(0);
    expect(await counter(f, "feed_candle_revisions_total", { symbol: "BTC" })).toBe(1);
    expect((await storedClosed("BTC")).find((c) => c.openTime === target.openTime)).toEqual(stored);
  });

  it("the public /status page shows each coin's feed state and last candle, without sign-in", async () => {
    const res = await fetch(`${server.baseUrl}/status`);
    expect(res.status).toBe(200);
    const page = await res.text();
    const btcRow = '<tr data-symbol="BTC" data-state="live" data-demo="false"><th scope="row">BTC</th>';
    expect(page).toContain(`${btcRow}<td>live</td><td>real market</td><td>1h</td>`);
    expect(page).toMatch(/<tr data-symbol="ETH" data-state="live" data-demo="false">[^\n]*<td>leading<\/td><\/tr>/);
  });

  it(
    "derivatives: funding rate, open interest in USD and long/short " +
      "ratio of the perpetual, venue named after the exchange",
    async () => {
      const f = await feeder(["LINK", "NOPE"], { FEED_DATASETS: "derivatives", FEED_DERIVATIVES_EVERY: "0.5" });
      await waitFor("derivatives stored", () => f.sources()[0]!.lastSuccessMs !== null);
      const rows = await server.db.handle.rows<{
        symbol: string;
        venue: string;
        funding_rate: number;
        open_interest_usd: number;
        long_short_ratio: number;
      }>(
        sql`SELECT symbol, venue, funding_rate, open_interest_usd, long_short_ratio FROM derivatives_readings
        ORDER BY symbol`,
      );
      const price = fake.forming("LINK").close;
      expect(rows).toEqual([
        {
          symbol: "LINK",
          venue: "binance",
          funding_rate: 0.0001,
          open_interest_usd: expect.closeTo(1000.5 * price, 6),
          long_short_ratio: 1.25,
        },
      ]);
      expect(f.coins().map((c) => c.state)).toEqual(["standby", "unlisted"]);
      await f.stop();
      feeders.splice(feeders.indexOf(f), 1);
    },
  );

  it("/healthz and /metrics on the feeder's loopback port", async () => {
    const f = feeders[0]!;
    await waitForHealthy(f);
    const metrics = await (await fetch(`http://127.0.0.1:${f.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/feed_lag_seconds\{symbol="BTC"\} /);
    expect(metrics).toMatch(/feed_candle_revisions_total\{symbol="BTC"\} 1/);
  });

  it("a second feeder stands by; the service refuses pushes for a leased coin from anyone else", async () => {
    const standby = await feeder(["BTC", "ETH"]);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(standby.coins().map((c) => c.state)).toEqual(["standby", "standby"]);
    const intruder = createServerClient(server.internalUrl, INTERNAL_TOKEN, "intruder");
    const last = (await storedClosed("BTC")).at(-1)!;
    const res = await intruder.push(
      [{ symbol: "BTC", tf: "1h", candle: { ...fake.forming("BTC"), close: last.close }, closed: false }],
      "live",
    );
    intruder.close();
    expect(res.rejections).toEqual([{ symbol: "BTC", reason: "lease_not_held" }]);
    await standby.stop();
    feeders.splice(feeders.indexOf(standby), 1);
  });

  it(
    "hot failover: the leader is killed with SIGKILL, the standby takes over " +
      "within FEED_FAILOVER and backfills with no gap and no duplicate",
    async () => {
      for (const f of feeders.splice(0)) await f.stop();
      const coins = ["SOL", "XRP"];
      for (const base of coins) firstExpected.set(base, fake.closed(base).at(-HISTORY)!.openTime);
      const spawnFeeder = () => {
        const child = spawn(NODE_BIN, ["src/cli/bin.ts", "feed", "--symbols", coins.join(",")], {
          cwd: PROJECT_ROOT,
          env: childEnv(feedEnv({ LOG_LEVEL: "info", FEED_FAILOVER: String(FAILOVER_S) })),
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        let out = "";
        child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
        return { child, logs: () => out };
      };
      const first = spawnFeeder();
      await waitFor(
        "first feeder leads",
        () =>
          /"leading coin"/.test(first.logs()) &&
          /"symbol":"XRP"[^\n]*"leading coin"|"leading coin"[^\n]*"symbol":"XRP"/.test(first.logs()),
      );
      const second = spawnFeeder();
      await waitFor("second feeder started", () => /"feeder started"/.test(second.logs()));
      await expectExact(coins);
      expect(second.logs()).not.toMatch(/"leading coin"/);
      first.child.kill("SIGKILL");
      const killedAt = Date.now();
      closeCandles(coins);
      closeCandles(coins);
      fake.tick(coins);
      await waitFor("standby takes over", () => (second.logs().match(/"leading coin"/g) ?? []).length === 2);
      expect(Date.now() - killedAt).toBeLessThan(FAILOVER_S * 1000);
      await expectExact(coins);
      closeCandles(coins);
      fake.tick(coins);
      await expectExact(coins);
      second.child.kill("SIGTERM");
    },
  );
});

describe("signals feed start errors", () => {
  it("a bad flag prints one line and exits 2; no token exits 2 and says where to find one", async () => {
    // Two independent processes: started together.
    const [bad, noToken] = await Promise.all([
      runCli(["feed", "--tf", "2h"], childEnv({})),
      runCli(["feed"], childEnv({ DATA_DIR: "/nonexistent/feeder-test" })),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe("signals feed: --tf must be one of 15m, 30m, 1h, 4h, 1d");
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/^signals feed: no internal token: set INTERNAL_TOKEN/);
  });
});
