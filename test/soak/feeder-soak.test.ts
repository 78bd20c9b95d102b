/**
 * Feeder soak (slow mode only: `SLOW=1`, SOAK_MINUTES, default 10): one `signals feed` process
 * on 50 coins against the fake Binance, a candle closing on every coin every minute of wall
 * time (1m pacing; stored on the 15m base timeframe, see docs/feeder.md), forming updates every
 * second, and the exchange's socket dropped at random every 20-60 s (now and then with a 429 or
 * a 5xx burst on the REST backfill). Reports the feeder's memory, the close-to-stored lag
 * (p50/p99) and the candles lost, which must be 0; bench/README.md records a run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import type { Candle } from "../../src/engine/candle.ts";
import { readCandles } from "../../src/market/store.ts";
import { type FakeExchange, startFakeExchange } from "../support/fake-exchange.ts";
import { childEnv, NODE_BIN, PROJECT_ROOT } from "../support/processes.ts";
import { loadRealCandles, REAL_COINS, realCandlesAvailable } from "../support/real-candles.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

const SLOW = process.env.SLOW === "1";
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const COIN_COUNT = 50;
const TF_MS = 15 * 60_000;
const HISTORY = 200;
const CLOSE_EVERY_MS = 60_000;

/** Resident set size of a process in MB (Linux /proc). */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.replace(/\D+/g, "")) / 1024;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

describe.runIf(SLOW && realCandlesAvailable)("feeder soak", () => {
  let fake: FakeExchange;
  let server: TestServer;
  let child: ChildProcess | null = null;
  afterAll(async () => {
    child?.kill("SIGKILL");
    await server?.close();
    await fake?.close();
  });

  it(
    `${COIN_COUNT} coins, a close a minute, random disconnects for ${MINUTES} min: no candle lost`,
    async () => {
      // 50 coins from the 12 real series (each reused under other codes, from other stretches).
      const coins = Array.from({ length: COIN_COUNT }, (_, i) => {
        const real = REAL_COINS[i % REAL_COINS.length]!;
        const series = loadRealCandles(real)!;
        const offset = Math.floor(i / REAL_COINS.length) * 3_000;
        return {
          base: `${real}${Math.floor(i / REAL_COINS.length)}`,
          candles: series.slice(offset, offset + HISTORY + MINUTES + 50),
        };
      });
      fake = await startFakeExchange({ coins, interval: "15m", intervalMs: TF_MS, history: HISTORY + 10 });
      const start = fake.now();
      server = await startTestServer({ feed: true, clock: createTestClock(start), env: { STALE_AFTER: "86400" } });
      const bases = coins.map((c) => c.base);
      const firstExpected = new Map(bases.map((b) => [b, fake.closed(b).at(-HISTORY)!.openTime]));
      let out = "";
      child = spawn(NODE_BIN, ["src/cli/bin.ts", "feed", "--symbols", bases.join(","), "--tf", "15m"], {
        cwd: PROJECT_ROOT,
        env: childEnv({
          FEED_REST_URL: fake.restUrl,
          FEED_WS_URL: fake.wsUrl,
          FEED_SERVER: server.internalUrl,
          INTERNAL_TOKEN,
          FEED_HISTORY: String(HISTORY),
          FEED_DATASETS: "candles",
          FEED_METRICS_PORT: "0",
          FEED_SILENCE: "20",
          LOG_LEVEL: "info",
        }),
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
      const pid = child.pid!;

      const storedMax = async () =>
        new Map(
          (
            await server.db.handle.rows<{ symbol: string; last: number }>(
              sql`SELECT symbol, max(open_time)::float8 AS last FROM candles WHERE tf = '15m' AND closed
                GROUP BY symbol`,
            )
          ).map((r) => [r.symbol, Number(r.last)]),
        );
      // Cold start: every coin backfilled.
      const coldStart = Date.now();
      for (;;) {
        const max = await storedMax();
        if (bases.every((b) => max.get(b) === fake.closed(b).at(-1)!.openTime)) break;
        if (Date.now() - coldStart > 120_000) throw new Error("cold start did not finish in 2 min");
        await new Promise((r) => setTimeout(r, 250));
      }
      const coldStartMs = Date.now() - coldStart;
      const rssAfterStart = rssMb(pid);

      // Each close's emission time, and when the service first held it.
      const emitted = new Map<string, number>();
      const lags: number[] = [];
      const seen = new Map(await storedMax());
      let drops = 0;
      let faults = 0;
      const end = Date.now() + MINUTES * 60_000;
      let nextClose = Date.now() + CLOSE_EVERY_MS;
      let nextDrop = Date.now() + 20_000 + Math.random() * 40_000;
      let nextTick = Date.now() + 1_000;
      let rssPeak = rssAfterStart;
      while (Date.now() < end) {
        const now = Date.now();
        if (now >= nextClose) {
          fake.closeCandles();
          server.clock.set(fake.now());
          for (const b of bases) emitted.set(`${b}|${fake.closed(b).at(-1)!.openTime}`, now);
          nextClose += CLOSE_EVERY_MS;
        } else if (now >= nextTick) {
          fake.tick();
          nextTick = now + 1_000;
        }
        if (now >= nextDrop) {
          drops++;
          if (drops % 3 === 0) {
            faults++;
            fake.failRest(drops % 2 === 0 ? { status: 429, headers: { "retry-after": "2" } } : { status: 503 }, {
              status: 502,
            });
          }
          fake.dropSockets();
          nextDrop = now + 20_000 + Math.random() * 40_000;
        }
        const max = await storedMax();
        for (const [symbol, last] of max) {
          const before = seen.get(symbol) ?? 0;
          for (let t = before + TF_MS; t <= last; t += TF_MS) {
            const at = emitted.get(`${symbol}|${t}`);
            if (at !== undefined) lags.push(Date.now() - at);
          }
          seen.set(symbol, last);
        }
        rssPeak = Math.max(rssPeak, rssMb(pid));
        await new Promise((r) => setTimeout(r, 200));
      }
      // Let the last close land, then count.
      await new Promise((r) => setTimeout(r, 5_000));
      const rssEnd = rssMb(pid);
      let lost = 0;
      let wrong = 0;
      let stored = 0;
      for (const b of bases) {
        const expected = fake.closed(b).filter((c) => c.openTime >= firstExpected.get(b)!);
        const got = (await readCandles(server.db.handle, b, "15m")).map(
          ({ openTime, open, high, low, close, volume }): Candle => ({ openTime, open, high, low, close, volume }),
        );
        stored += got.length;
        const byTime = new Map(got.map((c) => [c.openTime, c]));
        for (const c of expected) {
          const g = byTime.get(c.openTime);
          if (!g) lost++;
          else if (JSON.stringify(g) !== JSON.stringify(c)) wrong++;
        }
        if (got.length !== expected.length) wrong += Math.abs(got.length - expected.length);
      }
      const metrics = /"metricsPort":(\d+)/.exec(out);
      const text = metrics ? await (await fetch(`http://127.0.0.1:${metrics[1]}/metrics`)).text() : "";
      const total = (name: string) =>
        [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "gm"))].reduce((s, m) => s + Number(m[1]), 0);
      const sorted = [...lags].sort((a, b) => a - b);
      const report = {
        minutes: MINUTES,
        coins: COIN_COUNT,
        closesPerCoin: Math.round((MINUTES * 60_000) / CLOSE_EVERY_MS),
        coldStartMs,
        socketDrops: drops,
        restFaultBursts: faults,
        reconnects: total("feed_reconnects_total"),
        backfilledCandles: total("feed_backfilled_candles_total"),
        exchangeErrors: total("feed_exchange_errors_total"),
        pushDuplicates: total("feed_push_duplicates_total"),
        closesMeasured: lags.length,
        lagP50Ms: sorted.length ? percentile(sorted, 50) : null,
        lagP99Ms: sorted.length ? percentile(sorted, 99) : null,
        lagMaxMs: sorted.at(-1) ?? null,
        rssMbAfterColdStart: Math.round(rssAfterStart),
        rssMbPeak: Math.round(rssPeak),
        rssMbEnd: Math.round(rssEnd),
        candlesStored: stored,
        candlesLost: lost,
        candlesWrongOrExtra: wrong,
      };
      console.log(`FEEDER SOAK ${JSON.stringify(report)}`);
      expect(lost).toBe(0);
      expect(wrong).toBe(0);
      expect(lags.length).toBeGreaterThan(0);
    },
    (MINUTES + 5) * 60_000,
  );
});
