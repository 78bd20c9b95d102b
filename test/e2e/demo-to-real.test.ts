/**
 * Issue 22 §3, as an operator follows the README: the embedded default starts with the demo
 * feed, stops; the same data directory starts with DEMO_FEED=false and `signals feed` pushes
 * real candles from the local fake Binance. Afterwards the API's entries equal the engine run
 * on the real candles alone (no synthetic candle, level or signal event left under them), the
 * feeder backfilled its whole history (it did not resume after the demo's synthetic candles),
 * and no page shows a demo-derived figure without the label. On PGlite by default, on
 * PostgreSQL with DATABASE_URL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client.ts";
import type { Candle } from "../../src/engine/candle.ts";
import { readForming, runSeries } from "../../src/engine/index.ts";
import { DEMO_COINS } from "../../src/market/demo-feed.ts";
import { DEMO_DATA_LABEL } from "../../src/market/provenance.ts";
import { readCandles } from "../../src/market/store.ts";
import { type FakeExchange, startFakeExchange } from "../support/fake-exchange.ts";
import { childEnv, freePort, runCli, type ServerProcess, startServerProcess } from "../support/processes.ts";
import { loadRealCandles } from "../support/real-candles.ts";
import { spawnWatched, waitFor } from "../support/reliability.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";

const H = 3_600_000;
const HISTORY = 120;
/** Two demo coins the real feeder takes over; the other demo coins stay demo. */
const REAL = ["BTC", "ETH"] as const;
const STILL_DEMO = Object.keys(DEMO_COINS).filter((s) => !(REAL as readonly string[]).includes(s));

type ApiEntry = {
  symbol: string;
  ok: boolean;
  price?: number;
  signal?: string;
  confirmed?: boolean;
  defense?: number | null;
  arming?: unknown;
  atr_pct?: number;
};

describe(
  "from the demo to real data on one data directory (README: " + "DEMO_FEED=false npm start, then npx signals feed)",
  () => {
    let fake: FakeExchange;
    let dataDir: string;
    let vars: Record<string, string>;
    let server: ServerProcess | null = null;
    let feeder: ReturnType<typeof spawnWatched> | null = null;
    let dropDatabase: (() => Promise<void>) | null = null;
    let databaseUrl: string | null = null;

    beforeAll(async () => {
      const real = (coin: "BTC" | "ETH") => {
        const candles = loadRealCandles(coin, "1h");
        if (!candles) throw new Error("the real candle files are needed (test/support/real-candles.ts)");
        return candles.slice(-(HISTORY + 40));
      };
      // The server refuses candles from its future: the fake's present starts in the past.
      const startOpenTime = Math.floor(Date.now() / H) * H - 24 * H;
      fake = await startFakeExchange({
        coins: REAL.map((base) => ({ base, candles: real(base) })),
        interval: "1h",
        intervalMs: H,
        history: HISTORY + 10,
        startOpenTime,
      });
      dataDir = mkdtempSync(path.join(tmpdir(), "signals-demo-to-real-"));
      vars = { DATA_DIR: dataDir, PORT: "0", INTERNAL_PORT: String(await freePort()), LOG_LEVEL: "info", WORKERS: "1" };
      if (usingPostgres) {
        const database = await createPostgresDatabase();
        dropDatabase = database.drop;
        databaseUrl = database.url;
        vars.DATABASE_URL = database.url;
      }
    }, 60_000);

    afterAll(async () => {
      feeder?.child.kill("SIGKILL");
      await server?.stop();
      await fake?.close();
      await dropDatabase?.();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const page = async (p: string) => (await fetch(`${server!.baseUrl}${p}`)).text();

    async function withDb<T>(f: (db: Awaited<ReturnType<typeof openDb>>) => Promise<T>): Promise<T> {
      const db = await openDb({ databaseUrl, dataDir, poolSize: 1 });
      try {
        return await f(db);
      } finally {
        await db.close();
      }
    }

    it("the embedded default with the demo feed labels everything " +
      "it shows and counts none of it as a track record", async () => {
      // The embedded default runs the demo feed unasked; on PostgreSQL it is asked for.
      server = await startServerProcess(childEnv(usingPostgres ? { ...vars, DEMO_FEED: "true" } : vars));
      await waitFor(
        () =>
          server!
            .logs()
            .find((l) => typeof l.msg === "string" && l.msg.startsWith("demo feed: synthetic history loaded")),
        60_000,
        "the demo history",
      );
      const created = await runCli(
        ["account", "create", "--email", "demo@example.com", "--plan", "node", "--json"],
        childEnv(vars),
      );
      expect(created.code, created.stderr).toBe(0);
      const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC,XRP&tf=15m`, {
        headers: { "x-api-key": JSON.parse(created.stdout).api_key as string },
      });
      // The API marks the demo's readings; their prices are tick prices (0.01 for BTC, 0.0001 for XRP).
      const demoEntries = ((await res.json()) as { signals: ApiEntry[] }).signals;
      expect(demoEntries.map((e) => [e.ok, (e as { demo?: boolean }).demo])).toEqual([
        [true, true],
        [true, true],
      ]);
      for (const e of demoEntries) {
        const arming = e.arming as { trigger: number; invalidation: number } | null;
        const levels = [e.price!, e.defense, arming?.trigger, arming?.invalidation].filter(
          (v): v is number => typeof v === "number",
        );
        for (const v of levels) expect(Number(v.toFixed(e.symbol === "XRP" ? 4 : 2)), `${e.symbol} ${v}`).toBe(v);
      }
      const status = await page("/status");
      for (const symbol of Object.keys(DEMO_COINS))
        expect(status).toMatch(new RegExp(`data-symbol="${symbol}"[^>]*data-demo="true"[\\s\\S]*?${DEMO_DATA_LABEL}`));
      // The demo's sample datasets are not called CoinGecko or FRED.
      expect(status).not.toMatch(/CoinGecko|FRED/);
      const record = await page("/track-record");
      for (const symbol of Object.keys(DEMO_COINS)) expect(record).not.toContain(`data-series="${symbol}/`);
      expect(await server.stop()).toBe(0);
      server = null;
      await withDb(async (db) => {
        const [counts] = await db.rows<{ real_candles: number; demo_candles: number; real_events: number }>(sql`
        SELECT (SELECT count(*) FROM candles WHERE NOT demo)::int AS real_candles, (SELECT count(*) FROM candles
        WHERE demo)::int AS demo_candles,
               (SELECT count(*) FROM signal_events WHERE NOT demo)::int AS real_events`);
        expect(counts).toEqual({ real_candles: 0, demo_candles: expect.any(Number), real_events: 0 });
        expect(counts!.demo_candles).toBeGreaterThan(1_500 * Object.keys(DEMO_COINS).length);
      });
    }, 120_000);

    it("DEMO_FEED=false and `signals feed`: the feeder backfills its whole " +
      "history, and the API answers the engine on the real candles alone", async () => {
      const serverEnv = childEnv({ ...vars, DEMO_FEED: "false" });
      server = await startServerProcess(serverEnv);
      const created = await runCli(
        ["account", "create", "--email", "demo-to-real@example.com", "--plan", "node", "--json"],
        serverEnv,
      );
      expect(created.code, created.stderr).toBe(0);
      const apiKey = JSON.parse(created.stdout).api_key as string;
      feeder = spawnWatched(
        ["src/cli/bin.ts", "feed", "--symbols", REAL.join(",")],
        childEnv({
          FEED_REST_URL: fake.restUrl,
          FEED_WS_URL: fake.wsUrl,
          FEED_SERVER: server.internalUrl,
          DATA_DIR: dataDir,
          FEED_TF: "1h",
          FEED_HISTORY: String(HISTORY),
          FEED_SILENCE: "3600",
          FEED_METRICS_PORT: "0",
          FEED_DATASETS: "candles",
          LOG_LEVEL: "info",
        }),
      );
      // The feeder asked where to resume and was told the coins have no real history.
      const leading = await waitFor(
        () => {
          const lines = feeder!.logs.filter((l) => l.msg === "leading coin");
          return lines.length === REAL.length ? lines : null;
        },
        60_000,
        "the feeder leading both coins",
      );
      expect(leading.map((l) => l.resumeAfter)).toEqual([null, null]);

      const expectedClosed = (base: string) => fake.closed(base).slice(-HISTORY);
      const entries = await waitFor(
        async () => {
          const res = await fetch(`${server!.baseUrl}/api/v1/signals?symbols=${REAL.join(",")}&tf=1h`, {
            headers: { "x-api-key": apiKey },
          });
          const body = (await res.json()) as { signals: ApiEntry[] };
          return REAL.every((base, i) => body.signals[i]?.price === fake.forming(base).close) ? body.signals : null;
        },
        60_000,
        "the API showing the exchange's forming prices",
      );
      for (const entry of entries) expect(entry).not.toHaveProperty("demo");
      for (const [i, base] of REAL.entries()) {
        const expected = readForming(runSeries(expectedClosed(base)), fake.forming(base))!;
        const entry = entries[i]!;
        expect(
          {
            price: entry.price,
            signal: entry.signal,
            confirmed: entry.confirmed,
            defense: entry.defense,
            arming: entry.arming,
            atrPct: entry.atr_pct,
          },
          base,
        ).toEqual({
          price: expected.price,
          signal: expected.signal,
          confirmed: expected.confirmed,
          defense: expected.defense,
          arming: expected.arming,
          atrPct: expected.atrPct,
        });
      }

      // Pages: the real coins are real; the demo coins the feeder does not lead stay labelled and out of the track
      // record.
      const status = await page("/status");
      for (const symbol of REAL) expect(status).toMatch(new RegExp(`data-symbol="${symbol}"[^>]*data-demo="false"`));
      for (const symbol of STILL_DEMO)
        expect(status).toMatch(new RegExp(`data-symbol="${symbol}"[^>]*data-demo="true"[\\s\\S]*?${DEMO_DATA_LABEL}`));
      const record = await page("/track-record");
      for (const symbol of STILL_DEMO) expect(record).not.toContain(`data-series="${symbol}/`);

      feeder.child.kill("SIGTERM");
      await new Promise((resolve) => feeder!.child.once("exit", resolve));
      feeder = null;
      expect(await server.stop()).toBe(0);
      server = null;

      await withDb(async (db) => {
        for (const base of REAL) {
          const stored = (await readCandles(db, base, "1h")).map(
            ({ openTime, open, high, low, close, volume }): Candle => ({ openTime, open, high, low, close, volume }),
          );
          expect(stored, `${base} 1h history`).toEqual(expectedClosed(base));
        }
        const [left] = await db.rows<{ demo_rows: number; demo_coins: string[] | null }>(sql`
        SELECT ((SELECT count(*) FROM candles WHERE demo AND symbol IN ('BTC','ETH')) + (SELECT count(*)
        FROM signal_events WHERE demo AND symbol IN ('BTC','ETH'))
              + (SELECT count(*) FROM coin_fundamentals WHERE demo AND symbol IN ('BTC','ETH')) + (SELECT count(*)
              FROM derivatives_readings WHERE demo AND symbol IN ('BTC','ETH')))::int AS demo_rows,
               (SELECT array_agg(symbol ORDER BY symbol) FROM coins WHERE demo) AS demo_coins`);
        expect(left).toEqual({ demo_rows: 0, demo_coins: [...STILL_DEMO].sort() });
        // No event of a real coin predates its real history (none was left from the demo).
        const [early] = await db.rows<{ n: number }>(sql`
        SELECT count(*)::int AS n FROM signal_events e
         WHERE e.symbol IN ('BTC','ETH') AND e.candle_open_time < (SELECT min(open_time) FROM candles k
         WHERE k.symbol = e.symbol)`);
        expect(early!.n).toBe(0);
      });
    }, 180_000);
  },
);
