/**
 * Demo data never mixes with real data (issue 22 §3), rule by rule, on PGlite and PostgreSQL:
 * a real push for a coin that holds demo history replaces it in its first commit (candles,
 * checkpoints, signal events, the coin's sample datasets, unsent alerts of demo events), so the
 * readings and events are the engine's on the real candles alone, even where a real event has
 * the id of a demo one; a demo push over real data is refused; a feeder resumes from real
 * history only; a real dataset push replaces the demo rows of its scope and a demo push over
 * real rows is refused.
 */
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DbHandle } from "../../src/db/client.ts";
import { type Candle, readClosed, runSeries } from "../../src/engine/index.ts";
import { demoCandles } from "../../src/market/demo-feed.ts";
import { MarketFeed } from "../../src/market/feed.ts";
import { feedResumePoints } from "../../src/market/feed-leases.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { demoDataRows } from "../../src/market-data/demo-data.ts";
import { pushDataset } from "../../src/market-data/ingest-service.ts";
import { foldSteps } from "../support/engine-fold.ts";
import { loadRealCandles } from "../support/real-candles.ts";
import { waitFor } from "../support/reliability.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { createTestClock } from "../support/test-server.ts";

const H = 3_600_000;
const ANCHOR = Date.UTC(2026, 0, 1);
const logger = pino({ level: "silent" });

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

const quiet = (): DbHandle => ({ ...db.handle, listen: async () => {} });
const updates = (symbol: string, tf: "15m" | "1h", candles: readonly Candle[]): CandleUpdate[] =>
  candles.map((c) => ({ symbol, tf, ...c, closed: true }));

describe("a coin's candles: demo history, then real data", () => {
  const clock = createTestClock(ANCHOR + 40 * 24 * H);
  const feed = () => new MarketFeed({ db: quiet(), clock, logger, staleAfterMs: 365 * 24 * H, alertMaxDelayMs: 0 });
  // Real BTC candles re-timed onto the demo's own hours: the real events' ids are the demo's.
  const real = loadRealCandles("BTC", "1h")!
    .slice(-400)
    .map((c, i) => ({ ...c, openTime: ANCHOR + i * H }));
  let market: MarketFeed;

  async function count(query: ReturnType<typeof sql>): Promise<number> {
    const [row] = await db.handle.rows<{ n: number }>(query);
    return Number(row!.n);
  }

  beforeAll(async () => {
    expect(real).toHaveLength(400);
    market = feed();
    await market.load();
    const summary = await market.ingest(updates("BTC", "15m", demoCandles("BTC", 2_000)), {
      alerts: false,
      demo: true,
    });
    expect(summary.accepted).toBe(2_000);
    await market.ingest(updates("ETH", "15m", demoCandles("ETH", 500)), { alerts: false, demo: true });
    await pushDataset({ db: db.handle, clock, logger }, "derivatives", demoDataRows(clock()).derivatives, {
      demo: true,
    });
  });

  it("the demo's rows are marked demo, and a feeder is told the coin has no history to resume after", async () => {
    expect(await count(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = 'BTC' AND NOT demo`)).toBe(0);
    expect(
      await count(sql`SELECT count(*)::int AS n FROM signal_events WHERE symbol = 'BTC' AND demo`),
    ).toBeGreaterThan(0);
    expect(await feedResumePoints(db.handle, ["BTC"])).toEqual([
      { symbol: "BTC", known: false, baseTf: "", lastClosedOpenTime: 0 },
    ]);
  });

  it(
    "the first real push replaces the coin's demo history in its commit: " +
      "readings and events are the engine's on the real candles alone",
    async () => {
      const summary = await market.ingest(updates("BTC", "1h", real), { alerts: false });
      expect(summary).toMatchObject({ accepted: 400, rejected: 0 });
      // Nothing of the demo is left under BTC; ETH's demo history is untouched.
      expect(
        await count(sql`
      SELECT ((SELECT count(*) FROM candles WHERE symbol = 'BTC' AND demo) + (SELECT count(*) FROM signal_events
      WHERE symbol = 'BTC' AND demo)
            + (SELECT count(*) FROM derivatives_readings WHERE symbol = 'BTC' AND demo) + (SELECT count(*) FROM coins
            WHERE symbol = 'BTC' AND demo))::int AS n`),
      ).toBe(0);
      expect(await count(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = 'ETH' AND demo`)).toBeGreaterThan(
        500,
      );
      expect(
        await count(sql`SELECT count(*)::int AS n FROM derivatives_readings WHERE symbol = 'ETH' AND demo`),
      ).toBeGreaterThan(0);
      expect(await count(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = 'BTC' AND tf = '15m'`)).toBe(0);

      // The 1h events are exactly the engine's signal changes on the real candles, with real prices.
      const expected: { id: string; price: number }[] = [];
      let before: number | null = null;
      for (const [i, step] of foldSteps(real).entries()) {
        if (step.state.signalAt !== null && step.state.signalAt !== before)
          expected.push({ id: `BTC-1h-${step.state.signalAt}`, price: real[i]!.close });
        before = step.state.signalAt;
      }
      expect(expected.length).toBeGreaterThan(3);
      const stored = await db.handle.rows<{ id: string; price: number; demo: boolean }>(
        sql`SELECT id, price, demo FROM signal_events WHERE symbol = 'BTC' AND tf = '1h' ORDER BY candle_open_time`,
      );
      expect(stored.map((e) => ({ id: e.id, price: e.price }))).toEqual(expected);
      expect(stored.every((e) => e.demo === false)).toBe(true);

      const reading = readClosed(runSeries(real))!;
      const fresh = feed();
      await fresh.load();
      for (const m of [market, fresh]) {
        const found = m.lookup("BTC", "1h", clock());
        expect(found.ok && { ...found.reading, signalId: null }).toEqual({ ...reading, signalId: null });
        expect(found.ok && found.reading.demo).toBeFalsy();
      }
      const eth = fresh.lookup("ETH", "15m", clock());
      expect(eth.ok && eth.reading.demo).toBe(true);
      expect(await feedResumePoints(db.handle, ["BTC"])).toEqual([
        { symbol: "BTC", known: true, baseTf: "1h", lastClosedOpenTime: real.at(-1)!.openTime },
      ]);
    },
  );

  it("a demo push for a coin that holds real data is refused and changes nothing", async () => {
    const candlesBefore = await count(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = 'BTC'`);
    const more = demoCandles("BTC", 3_000).slice(2_000);
    const summary = await market.ingest(updates("BTC", "15m", more), { alerts: false, demo: true });
    expect(summary).toMatchObject({ accepted: 0, rejected: 1_000, reasons: { real_data_held: 1_000 } });
    expect(await count(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = 'BTC'`)).toBe(candlesBefore);
    expect(await count(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = 'BTC' AND demo`)).toBe(0);
  });

  it("the demo's sample datasets skip a coin whose candles are real", async () => {
    const rows = demoDataRows(clock());
    const summary = await pushDataset({ db: db.handle, clock, logger }, "fundamentals", rows.fundamentals, {
      demo: true,
    });
    expect(summary.reasons).toMatchObject({ real_data_held: 1 });
    expect(await count(sql`SELECT count(*)::int AS n FROM coin_fundamentals WHERE symbol = 'BTC'`)).toBe(0);
    expect(await count(sql`SELECT count(*)::int AS n FROM coin_fundamentals WHERE symbol = 'ETH' AND demo`)).toBe(1);
  });
});

describe("another process on the same database", () => {
  it(
    "follows the replacement: after the real commit's notice " + "it answers the real reading, never the demo's",
    async () => {
      const clock = createTestClock(ANCHOR + 40 * 24 * H);
      // Listening feeds: the writer, and a follower that only learns the market from notices.
      const make = () =>
        new MarketFeed({ db: db.handle, clock, logger, staleAfterMs: 365 * 24 * H, alertMaxDelayMs: 0 });
      const writer = make();
      await writer.load();
      await writer.ingest(updates("SOL", "15m", demoCandles("SOL", 600)), { alerts: false, demo: true });
      const follower = make();
      await follower.load();
      const demoReading = follower.lookup("SOL", "15m", clock());
      expect(demoReading.ok && demoReading.reading.demo).toBe(true);
      const real = loadRealCandles("SOL", "1h")!
        .slice(-200)
        .map((c, i) => ({ ...c, openTime: ANCHOR + i * H }));
      await writer.ingest(updates("SOL", "1h", real), { alerts: false });
      const expected = readClosed(runSeries(real))!;
      // The notice is delivered on commit; the follower reloads the coin from the store.
      await waitFor(
        () => {
          const found = follower.lookup("SOL", "1h", clock());
          return found.ok && found.reading.demo !== true ? found : null;
        },
        20_000,
        "the follower's real SOL reading",
      );
      const found = follower.lookup("SOL", "1h", clock());
      expect(found.ok && { ...found.reading, signalId: null }).toEqual({ ...expected, signalId: null });
      expect(found.ok && found.reading.demo).toBeFalsy();
      expect(follower.lookup("SOL", "15m", clock())).toEqual({ ok: false, reason: "no_data" });
    },
  );
});

describe("datasets: demo rows, then real rows", () => {
  const clock = createTestClock(ANCHOR + 60 * 24 * H);
  const deps = () => ({ db: db.handle, clock, logger });

  it(
    "a real derivatives push replaces its coin's demo rows " + "only; a demo push over it is refused for that coin",
    async () => {
      const demo = demoDataRows(clock()).derivatives;
      await pushDataset(deps(), "derivatives", demo, { demo: true });
      const realRow = {
        symbol: "SOL",
        venue: "binance-futures",
        time: clock() - 60_000,
        fundingRate: 0.0001,
        openInterestUsd: 1e9,
        longShortRatio: 1.1,
      };
      expect(await pushDataset(deps(), "derivatives", [realRow])).toMatchObject({ accepted: 1, rejected: 0 });
      const rows = await db.handle.rows<{ symbol: string; venue: string; demo: boolean }>(
        sql`SELECT symbol, venue, demo FROM derivatives_readings WHERE symbol IN ('SOL', 'BNB') ORDER BY symbol, venue`,
      );
      expect(rows.filter((r) => r.symbol === "SOL")).toEqual([
        { symbol: "SOL", venue: "binance-futures", demo: false },
      ]);
      expect(rows.filter((r) => r.symbol === "BNB").every((r) => r.demo)).toBe(true);

      clock.advance(10 * 60_000);
      const again = demoDataRows(clock()).derivatives;
      const summary = await pushDataset(deps(), "derivatives", again, { demo: true });
      // Refused: SOL's (real derivatives) and those of any coin whose candles are real.
      const realCoins = new Set([
        "SOL",
        ...(await db.handle.rows<{ symbol: string }>(sql`SELECT symbol FROM coins WHERE NOT demo`)).map(
          (r) => r.symbol,
        ),
      ]);
      const refused = again.filter((r) => realCoins.has(r.symbol)).length;
      expect(summary).toMatchObject({ rejected: refused, reasons: { real_data_held: refused } });
      expect(await db.handle.rows(sql`SELECT venue FROM derivatives_readings WHERE symbol = 'SOL'`)).toEqual([
        { venue: "binance-futures" },
      ]);
    },
  );

  it("real news replaces every demo item, and later demo news is refused", async () => {
    await pushDataset(deps(), "news", demoDataRows(clock()).news, { demo: true });
    const [before] = await db.handle.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM news_items WHERE demo`);
    expect(Number(before!.n)).toBeGreaterThan(0);
    const item = {
      id: "real-1",
      time: clock() - H,
      title: "A real headline",
      source: "Example Wire",
      url: "https://news.example.org/1",
      coins: ["BTC"],
    };
    expect(await pushDataset(deps(), "news", [item])).toMatchObject({ accepted: 1 });
    expect(await db.handle.rows(sql`SELECT id, demo FROM news_items ORDER BY id`)).toEqual([
      { id: "real-1", demo: false },
    ]);
    const demo = demoDataRows(clock()).news;
    expect(await pushDataset(deps(), "news", demo, { demo: true })).toMatchObject({
      accepted: 0,
      rejected: demo.length,
      reasons: { real_data_held: demo.length },
    });
  });
});
