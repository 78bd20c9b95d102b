/**
 * MarketFeed over a real database (PGlite, or Postgres with DATABASE_URL): real BTC and ETH 1h
 * candles imported through readCandleFile give the same 1h/4h/1d readings as the engine run
 * directly; a new feed over the same store after load() answers identically (restart), also
 * after forming updates and when both continue; re-import is all duplicates; bad rows are
 * rejected with reasons and counts and leave no trace; stale / unknown_symbol / no_data.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import type { DbHandle } from "../../src/db/client.ts";
import { type Candle, type Reading, readClosed, readForming, restoreState, runSeries } from "../../src/engine/index.ts";
import { readCandleFile } from "../../src/market/csv-candles.ts";
import { MarketFeed } from "../../src/market/feed.ts";
import type { SnapshotLookup } from "../../src/market/snapshot.ts";
import { countCandles, readCandles } from "../../src/market/store.ts";
import { TIMEFRAMES } from "../../src/market/timeframes.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { referenceSignalId } from "../support/reference-signal-id.ts";
import { waitFor } from "../support/reliability.ts";
import { createTestDb, type TestDb, usingPostgres } from "../support/test-db.ts";
import { createTestClock, type TestClock } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const CANDLE_DIR = fileURLToPath(new URL("../../../shared/data/candles/", import.meta.url));
const BTC_FILE = `${CANDLE_DIR}BTCUSDT_1h.csv.gz`;
const ETH_FILE = `${CANDLE_DIR}ETHUSDT_1h.csv.gz`;
const H = 3_600_000;
const TF_MS = { "4h": 4 * H, "1d": 24 * H } as const;
const STALE_AFTER_MS = loadConfig({}).staleAfterMs;
const ALERT_MAX_DELAY_MS = loadConfig({}).alerts.maxDelayMs;
const logger = pino({ level: "silent" });

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

/**
 * The test database without LISTEN: the feeds of this file (an original and its "restarted"
 * copies, in one process) change only through their own ingest and load(). Following another
 * process's commits (LISTEN/NOTIFY) is not the subject here and would make restart equality
 * compare the store with itself.
 */
function quietHandle(): DbHandle {
  return { ...db.handle, listen: async () => {} };
}

function newFeed(clock: TestClock): MarketFeed {
  return new MarketFeed({
    db: quietHandle(),
    clock,
    logger,
    staleAfterMs: STALE_AFTER_MS,
    alertMaxDelayMs: ALERT_MAX_DELAY_MS,
  });
}

async function loadedFeed(clock: TestClock): Promise<MarketFeed> {
  const feed = newFeed(clock);
  await feed.load();
  return feed;
}

// ------------------------------------------------------------------------------------------
// Expected values, computed without src/market.
// ------------------------------------------------------------------------------------------

/** Independent parse of the shared CSV (header, ISO times with an offset). */
function parseCsvGz(file: string): Candle[] {
  const lines = gunzipSync(readFileSync(file)).toString("utf8").trim().split("\n");
  expect(lines[0]).toMatch(/^open_time,open,high,low,close,volume/);
  return lines.slice(1).map((line) => {
    const f = line.split(",");
    return {
      openTime: Date.parse(f[0]!.replace(" ", "T")),
      open: +f[1]!,
      high: +f[2]!,
      low: +f[3]!,
      close: +f[4]!,
      volume: +f[5]!,
    };
  });
}

/** UTC buckets of `tfMs` over 1h candles: closed ones, and the last one when its final hour is missing. */
function aggregate(base: readonly Candle[], tfMs: number): { closed: Candle[]; partial: Candle | null } {
  const out: Candle[] = [];
  for (const c of base) {
    const start = Math.floor(c.openTime / tfMs) * tfMs;
    const cur = out[out.length - 1];
    if (cur && cur.openTime === start) {
      out[out.length - 1] = {
        ...cur,
        high: Math.max(cur.high, c.high),
        low: Math.min(cur.low, c.low),
        close: c.close,
        volume: cur.volume + c.volume,
      };
    } else {
      out.push({ ...c, openTime: start });
    }
  }
  const last = base[base.length - 1];
  const lastBucket = out[out.length - 1];
  if (last && lastBucket && last.openTime + H !== lastBucket.openTime + tfMs)
    return { closed: out.slice(0, -1), partial: lastBucket };
  return { closed: out, partial: null };
}

/** What lookup() must answer for a 1h coin whose closed candles are `base` (plus a forming 1h candle). */
function expectedLookup(
  symbol: string,
  base: readonly Candle[],
  tf: "1h" | "4h" | "1d",
  forming1h: Candle | null = null,
): SnapshotLookup {
  let closed: Candle[];
  let forming: Candle | null;
  if (tf === "1h") {
    closed = [...base];
    forming = forming1h;
  } else {
    const agg = aggregate(forming1h ? [...base, forming1h] : base, TF_MS[tf]);
    closed = agg.closed;
    // A forming 1h candle that completes its bucket still leaves that bucket forming.
    forming = forming1h && !agg.partial ? closed.pop()! : agg.partial;
  }
  // Fewer than 14 closed candles: ATR(14) of the history is undefined (docs/decisions.md).
  if (closed.length < 14) return { ok: false, reason: "no_data" };
  const state = runSeries(closed);
  const reading: Reading = forming ? readForming(state, forming) : readClosed(state)!;
  return {
    ok: true,
    reading: { ...reading, atrPct: reading.atrPct!, signalId: referenceSignalId(symbol, tf, state, reading) },
  };
}

async function* take<T>(source: AsyncIterable<T>, n: number): AsyncGenerator<T> {
  if (n <= 0) return;
  let i = 0;
  for await (const item of source) {
    yield item;
    if (++i >= n) return;
  }
}

const closedUpdate = (symbol: string, c: Candle, closed = true): CandleUpdate => ({ symbol, tf: "1h", closed, ...c });

/** Every lookup of a coin (all five timeframes). */
function allLookups(feed: MarketFeed, symbol: string, now: number): Record<string, SnapshotLookup> {
  return Object.fromEntries(TIMEFRAMES.map((tf) => [tf, feed.lookup(symbol, tf, now)]));
}

/** A deterministic random walk of valid 1h candles (mulberry32). */
function walk(seed: number, count: number, start: number): Candle[] {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out: Candle[] = [];
  let price = 50 + rand() * 50;
  for (let i = 0; i < count; i++) {
    const open = price;
    const close = open * (1 + (rand() - 0.5) * 0.05);
    out.push({
      openTime: start + i * H,
      open,
      high: Math.max(open, close) * (1 + rand() * 0.01),
      low: Math.min(open, close) * (1 - rand() * 0.01),
      close,
      volume: rand() * 100,
    });
    price = close;
  }
  return out;
}

/** Every stored candle row of a symbol, normalised. */
async function storedRows(symbol: string) {
  const rows = await db.handle.rows<Record<string, unknown>>(
    sql`SELECT tf, open_time, open, high, low, close, volume, closed FROM candles WHERE symbol = ${symbol} ORDER BY tf,
      open_time`,
  );
  return rows.map((r) => ({
    tf: String(r.tf),
    openTime: Number(r.open_time),
    open: Number(r.open),
    high: Number(r.high),
    low: Number(r.low),
    close: Number(r.close),
    volume: Number(r.volume),
    closed: r.closed === true || r.closed === "t",
  }));
}

/** The rows the store must hold for a 1h coin whose closed candles are `base` (no forming 1h). */
function expectedRows(base: readonly Candle[]) {
  const rows = base.map((c) => ({ tf: "1h", ...c, closed: true }));
  for (const tf of ["4h", "1d"] as const) {
    const { closed, partial } = aggregate(base, TF_MS[tf]);
    rows.push(...closed.map((c) => ({ tf, ...c, closed: true })));
    if (partial) rows.push({ tf, ...partial, closed: false });
  }
  return rows.sort((x, y) => x.tf.localeCompare(y.tf) || x.openTime - y.openTime);
}

// ------------------------------------------------------------------------------------------

describe.runIf(existsSync(BTC_FILE) && existsSync(ETH_FILE))(
  `real BTC and ETH 1h candles (${usingPostgres ? "Postgres" : "PGlite"})`,
  () => {
    const clock = createTestClock();
    const ETH_SLICE = 3_003; // ends at 10:00 UTC: a 3-hour partial 4h bucket and a partial day
    let btc: Candle[];
    let eth: Candle[];
    let feed: MarketFeed;

    beforeAll(async () => {
      btc = parseCsvGz(BTC_FILE);
      eth = parseCsvGz(ETH_FILE);
      feed = await loadedFeed(clock);
    });

    it("imported through readCandleFile, give 1h/4h/1d readings equal to the engine run directly", async () => {
      const btcSummary = await feed.ingest(readCandleFile(BTC_FILE, "BTC", "1h"));
      expect(btcSummary).toEqual({ accepted: btc.length, rejected: 0, duplicates: 0, rejections: [], reasons: {} });
      // A lower-case symbol is upper-cased on receipt.
      const ethSummary = await feed.ingest(take(readCandleFile(ETH_FILE, "eth", "1h"), ETH_SLICE));
      expect(ethSummary).toEqual({ accepted: ETH_SLICE, rejected: 0, duplicates: 0, rejections: [], reasons: {} });
      expect(feed.symbols()).toEqual(["BTC", "ETH"]);

      const ethSlice = eth.slice(0, ETH_SLICE);
      expect(aggregate(ethSlice, TF_MS["4h"]).partial).not.toBeNull();
      expect(aggregate(btc, TF_MS["1d"]).partial).not.toBeNull();
      for (const [symbol, candles] of [
        ["BTC", btc],
        ["ETH", ethSlice],
      ] as const) {
        for (const tf of ["1h", "4h", "1d"] as const) {
          const expected = expectedLookup(symbol, candles, tf);
          expect(expected.ok, `${symbol} ${tf}`).toBe(true);
          expect(feed.lookup(symbol, tf, clock()), `${symbol} ${tf}`).toEqual(expected);
        }
        expect(feed.lookup(symbol, "15m", clock())).toEqual({ ok: false, reason: "no_data" });
        expect(feed.lookup(symbol, "30m", clock())).toEqual({ ok: false, reason: "no_data" });
      }

      // The store holds exactly the candles, closed derived ones and the partial buckets.
      expect(await readCandles(db.handle, "BTC", "1h")).toEqual(btc);
      expect(await readCandles(db.handle, "BTC", "1d")).toEqual(aggregate(btc, TF_MS["1d"]).closed);
      expect(await storedRows("ETH")).toEqual(expectedRows(ethSlice));
      expect(await countCandles(db.handle, ["BTC"])).toEqual({
        "1h": btc.length,
        "4h": aggregate(btc, TF_MS["4h"]).closed.length + 1,
        "1d": aggregate(btc, TF_MS["1d"]).closed.length + 1,
      });
    });

    it("are rebuilt by a new feed from the store: identical lookups for every timeframe", async () => {
      const restarted = await loadedFeed(clock);
      expect(restarted.symbols()).toEqual(["BTC", "ETH"]);
      for (const symbol of ["BTC", "ETH", "SOL"])
        expect(allLookups(restarted, symbol, clock()), symbol).toEqual(allLookups(feed, symbol, clock()));
      // The checkpoints are the engine states themselves.
      const [row] = await db.handle.rows<{ state: unknown }>(
        sql`SELECT state FROM series_state WHERE symbol = 'BTC' AND tf = '4h'`,
      );
      const state = typeof row!.state === "string" ? JSON.parse(row!.state) : row!.state;
      expect(restoreState(state)).toEqual(runSeries(aggregate(btc, TF_MS["4h"]).closed));
    });

    it(
      "after forming updates, restart gives identical lookups, " + "and both feeds stay equal as candles keep coming",
      async () => {
        const next = eth[ETH_SLICE]!; // 11:00 UTC, the last hour of the 08:00 4h bucket
        const after = eth[ETH_SLICE + 1]!;
        const early: Candle = {
          ...next,
          high: Math.max(next.open, next.low),
          close: next.low,
          volume: next.volume / 3,
        };
        const s = await feed.ingest([closedUpdate("ETH", early, false), closedUpdate("ETH", next, false)]);
        expect(s).toMatchObject({ accepted: 2, rejected: 0, duplicates: 0 });
        const base = eth.slice(0, ETH_SLICE);
        for (const tf of ["1h", "4h", "1d"] as const)
          expect(feed.lookup("ETH", tf, clock()), tf).toEqual(expectedLookup("ETH", base, tf, next));

        const restarted = await loadedFeed(clock);
        for (const symbol of ["BTC", "ETH"])
          expect(allLookups(restarted, symbol, clock()), symbol).toEqual(allLookups(feed, symbol, clock()));

        // A newer forming candle implicitly closes `next`; restart again in that state.
        await feed.ingest([closedUpdate("ETH", after, false)]);
        const restarted2 = await loadedFeed(clock);
        expect(allLookups(restarted2, "ETH", clock())).toEqual(allLookups(feed, "ETH", clock()));
        for (const tf of ["1h", "4h", "1d"] as const)
          expect(feed.lookup("ETH", tf, clock()), tf).toEqual(
            expectedLookup("ETH", eth.slice(0, ETH_SLICE + 1), tf, after),
          );

        // The same further candles into the original feed and the restarted one: still identical,
        // and equal to the engine on the whole series (the partial buckets were restored exactly).
        const more = eth.slice(ETH_SLICE + 1, ETH_SLICE + 40).map((c) => closedUpdate("ETH", c));
        await restarted2.ingest(more);
        await feed.ingest(more);
        expect(allLookups(restarted2, "ETH", clock())).toEqual(allLookups(feed, "ETH", clock()));
        for (const tf of ["1h", "4h", "1d"] as const)
          expect(feed.lookup("ETH", tf, clock()), tf).toEqual(expectedLookup("ETH", eth.slice(0, ETH_SLICE + 40), tf));
        expect(await storedRows("ETH")).toEqual(expectedRows(eth.slice(0, ETH_SLICE + 40)));
      },
    );

    it("re-imported, are all duplicates and change nothing", async () => {
      const before = allLookups(feed, "ETH", clock());
      const rowsBefore = await storedRows("ETH");
      const summary = await feed.ingest(take(readCandleFile(ETH_FILE, "ETH", "1h"), ETH_SLICE));
      expect(summary).toEqual({ accepted: 0, rejected: 0, duplicates: ETH_SLICE, rejections: [], reasons: {} });
      expect(allLookups(feed, "ETH", clock())).toEqual(before);
      expect(await storedRows("ETH")).toEqual(rowsBefore);
      expect(allLookups(await loadedFeed(clock), "ETH", clock())).toEqual(before);
    });
  },
);

describe(`bad data (${usingPostgres ? "Postgres" : "PGlite"})`, () => {
  it(
    "bad rows mixed into a stream are rejected with reasons and " +
      "counts; good rows are applied; no trace of the bad ones",
    async () => {
      const clock = createTestClock();
      const feed = await loadedFeed(clock);
      // 2026-01-01 00:00 UTC onwards, with 2026-01-02 19:00 (the last hour of a 4h bucket) missing: a gap.
      const all = walk(5, 90, Date.UTC(2026, 0, 1));
      const good = all.filter((_, i) => i !== 43);
      const stream: CandleUpdate[] = [];
      const bad: Array<{ index: number; symbol: string; reason: string }> = [];
      let duplicates = 0;
      const addBad = (u: CandleUpdate, reason: string) => {
        bad.push({ index: stream.length, symbol: u.symbol.toUpperCase(), reason });
        stream.push(u);
      };
      for (let i = 0; i < good.length; i++) {
        const c = good[i]!;
        const u = closedUpdate("mix", c); // lower case: upper-cased on receipt
        // Bad variants of the candle about to arrive: were any applied, its values would show.
        if (i === 5) addBad({ ...u, close: Number.NaN }, "non_finite_value");
        if (i === 6) addBad({ ...u, high: Number.POSITIVE_INFINITY }, "non_finite_value");
        if (i === 7) addBad({ ...u, open: -c.open }, "non_positive_price");
        if (i === 8) addBad({ ...u, low: 0 }, "non_positive_price");
        if (i === 9) addBad({ ...u, high: c.low * 0.9 }, "high_below_low");
        if (i === 10) addBad({ ...u, open: c.high * 1.01 }, "open_outside_range");
        if (i === 11) addBad({ ...u, close: c.low * 0.99 }, "close_outside_range");
        if (i === 12) addBad({ ...u, volume: -1 }, "negative_volume");
        if (i === 13) addBad({ ...u, tf: "2h" }, "unknown_timeframe");
        if (i === 14) addBad({ ...u, openTime: c.openTime + 60_000 }, "misaligned_open_time");
        if (i === 15) addBad({ ...u, openTime: Date.UTC(2030, 0, 1) }, "future_open_time");
        if (i === 16) addBad({ ...u, symbol: "MIX/USDT" }, "invalid_symbol");
        if (i === 17) addBad({ ...u, tf: "4h", openTime: Date.UTC(2026, 0, 1, 16) }, "not_base_timeframe");
        if (i === 18) addBad({ ...u, open: Number.NaN, high: -1, low: 5, close: 1 }, "non_finite_value");
        stream.push(u);
        // Earlier than the previous row of the stream.
        if (i === 30) addBad(closedUpdate("MIX", { ...good[25]!, close: good[25]!.low }), "out_of_order");
        // A forming update at the last closed candle: out of order too.
        if (i === 31) addBad(closedUpdate("MIX", { ...c, close: c.high }, false), "out_of_order");
        // The same time again, closed, different values: a duplicate, ignored (history is immutable).
        if (i === 32) {
          stream.push(closedUpdate("MIX", { ...c, high: c.high * 2, close: c.high * 1.5 }));
          duplicates++;
        }
      }
      // A symbol never seen whose only rows are bad.
      addBad(closedUpdate("NEVER", { ...good[0]!, high: 0.5 * good[0]!.low }), "high_below_low");

      const summary = await feed.ingest(stream);
      const reasons: Record<string, number> = {};
      for (const b of bad) reasons[b.reason] = (reasons[b.reason] ?? 0) + 1;
      expect(summary).toEqual({ accepted: good.length, rejected: bad.length, duplicates, rejections: bad, reasons });
      expect(summary.reasons).toMatchObject({ non_finite_value: 3, out_of_order: 2, non_positive_price: 2 });

      // The store: exactly the good candles and what they build, nothing else.
      expect(await storedRows("MIX")).toEqual(expectedRows(good));
      expect(await storedRows("NEVER")).toEqual([]);
      expect(await db.handle.rows(sql`SELECT symbol FROM coins WHERE symbol IN ('NEVER', 'MIX/USDT')`)).toEqual([]);
      expect(await db.handle.rows(sql`SELECT symbol FROM candles WHERE symbol IN ('NEVER', 'MIX/USDT')`)).toEqual([]);
      // The state: the engine on the good candles, in memory, in the checkpoint and after a restart.
      for (const tf of ["1h", "4h", "1d"] as const)
        expect(feed.lookup("MIX", tf, clock()), tf).toEqual(expectedLookup("MIX", good, tf));
      const [row] = await db.handle.rows<{ state: unknown }>(
        sql`SELECT state FROM series_state WHERE symbol = 'MIX' AND tf = '1h'`,
      );
      expect(restoreState(typeof row!.state === "string" ? JSON.parse(row!.state) : row!.state)).toEqual(
        runSeries(good),
      );
      expect(allLookups(await loadedFeed(clock), "MIX", clock())).toEqual(allLookups(feed, "MIX", clock()));
      expect(feed.lookup("NEVER", "1h", clock())).toEqual({ ok: false, reason: "unknown_symbol" });
    },
  );

  it(
    "a row earlier than the previous row of the stream is " + "out_of_order, even when that time was never stored",
    async () => {
      const clock = createTestClock();
      const feed = await loadedFeed(clock);
      const c = walk(6, 6, Date.UTC(2026, 1, 1));
      const summary = await feed.ingest([c[0]!, c[1]!, c[3]!, c[2]!, c[4]!, c[1]!].map((x) => closedUpdate("ORD", x)));
      expect(summary).toEqual({
        accepted: 4,
        rejected: 2,
        duplicates: 0,
        rejections: [
          { index: 3, symbol: "ORD", reason: "out_of_order" },
          { index: 5, symbol: "ORD", reason: "out_of_order" },
        ],
        reasons: { out_of_order: 2 },
      });
      // Hour 2 stays a gap: it arrived after hour 3.
      expect((await readCandles(db.handle, "ORD", "1h")).map((x) => x.openTime)).toEqual(
        [c[0]!, c[1]!, c[3]!, c[4]!].map((x) => x.openTime),
      );
      // In a later stream, the stored history is what counts: hour 2 is now a duplicate.
      expect(await feed.ingest([closedUpdate("ORD", c[2]!)])).toMatchObject({
        accepted: 0,
        rejected: 0,
        duplicates: 1,
      });
    },
  );

  it("a higher timeframe pushed for a coin fed at 1h is not_base_timeframe and changes nothing", async () => {
    const clock = createTestClock();
    const feed = await loadedFeed(clock);
    const base = walk(7, 30, Date.UTC(2026, 2, 1));
    await feed.ingest(base.map((c) => closedUpdate("TFX", c)));
    const before = allLookups(feed, "TFX", clock());
    const rows = await storedRows("TFX");
    const fourHour: CandleUpdate = {
      ...closedUpdate("TFX", base[0]!),
      tf: "4h",
      openTime: base[base.length - 1]!.openTime + 4 * H - (base[base.length - 1]!.openTime % (4 * H)),
    };
    const summary = await feed.ingest([
      fourHour,
      { ...fourHour, tf: "1d", openTime: Date.UTC(2026, 2, 3) },
      { ...fourHour, tf: "15m" },
    ]);
    expect(summary).toEqual({
      accepted: 0,
      rejected: 3,
      duplicates: 0,
      rejections: [0, 1, 2].map((index) => ({ index, symbol: "TFX", reason: "not_base_timeframe" })),
      reasons: { not_base_timeframe: 3 },
    });
    expect(allLookups(feed, "TFX", clock())).toEqual(before);
    expect(await storedRows("TFX")).toEqual(rows);
  });
});

describe(`a batch the store cannot commit (${usingPostgres ? "Postgres" : "PGlite"})`, () => {
  it("fails the stream that sent it, leaves memory equal to the store, and a resend fills the hole", async () => {
    const clock = createTestClock();
    // The same database, with a switch that makes the next transaction fail and holds the one
    // after it (the reload of the failed batch's coins) until the test lets it run.
    let failNext = false;
    let holdNext = false;
    let reloadStarted = false;
    let releaseReload!: () => void;
    const reloadReleased = new Promise<void>((resolve) => {
      releaseReload = resolve;
    });
    const real = db.handle.db;
    const failing = Object.create(real) as typeof real;
    failing.transaction = ((...args: Parameters<typeof real.transaction>) => {
      if (failNext) {
        failNext = false;
        holdNext = true;
        return Promise.reject(new Error("store unavailable"));
      }
      if (holdNext) {
        holdNext = false;
        reloadStarted = true;
        return reloadReleased.then(() => real.transaction(...args));
      }
      return real.transaction(...args);
    }) as typeof real.transaction;
    const feed = new MarketFeed({
      db: { ...quietHandle(), db: failing },
      clock,
      logger,
      staleAfterMs: STALE_AFTER_MS,
      alertMaxDelayMs: ALERT_MAX_DELAY_MS,
    });
    await feed.load();
    const c = walk(10, 30, Date.UTC(2026, 5, 1)).map((x) => closedUpdate("FLK", x));
    await feed.ingest(c.slice(0, 20));
    const committed = await readCandles(db.handle, "FLK", "1h");
    expect(committed).toHaveLength(20);

    let offeredAfterFailure = false;
    async function* slowStream() {
      yield c[20]!;
      yield c[21]!;
      failNext = true;
      // The background flush (every 100 ms) runs here and fails: it takes the failing transaction.
      await waitFor(() => reloadStarted, EVENT_WAIT_MS, "the background flush to fail and start its reload");
      offeredAfterFailure = true;
      yield c[22]!;
      yield c[23]!;
    }
    let settled = false;
    const ingesting = feed.ingest(slowStream());
    ingesting
      .catch(() => {})
      .finally(() => {
        settled = true;
      });
    // The stream sees the failure at its next update; its error waits for the reload, so memory
    // equals the store when the sender hears of it. Two event-loop turns after the update was
    // offered, an error raised at once would have settled (only microtasks stand between them).
    await waitFor(() => offeredAfterFailure, EVENT_WAIT_MS, "the stream to offer an update after the failure");
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled, "the stream's error came before the reload had finished").toBe(false);
    releaseReload();
    await expect(ingesting).rejects.toThrow(/could not be committed/);
    // Nothing of the failed stream is kept, in memory or in the store.
    expect(await readCandles(db.handle, "FLK", "1h")).toEqual(committed);
    expect(feed.lookup("FLK", "1h", clock())).toEqual(expectedLookup("FLK", committed, "1h"));
    expect(allLookups(feed, "FLK", clock())).toEqual(allLookups(await loadedFeed(clock), "FLK", clock()));

    // The sender resends: everything from the first lost row is applied, no hole is left.
    expect(await feed.ingest(c.slice(20, 30))).toMatchObject({ accepted: 10, rejected: 0, duplicates: 0 });
    const all = await readCandles(db.handle, "FLK", "1h");
    expect(all.map((x) => x.openTime)).toEqual(c.map((x) => x.openTime));
    expect(feed.lookup("FLK", "1h", clock())).toEqual(expectedLookup("FLK", all, "1h"));
  });
});

describe(`freshness and missing data (${usingPostgres ? "Postgres" : "PGlite"})`, () => {
  it(`a coin silent past STALE_AFTER (${STALE_AFTER_MS / 1000} s) is stale, after a restart too`, async () => {
    const clock = createTestClock();
    const feed = await loadedFeed(clock);
    const base = walk(8, 40, Date.UTC(2026, 3, 1));
    await feed.ingest(base.map((c) => closedUpdate("STL", c)));
    const fresh = feed.lookup("STL", "1h", clock());
    expect(fresh.ok).toBe(true);

    clock.advance(STALE_AFTER_MS);
    expect(feed.lookup("STL", "1h", clock())).toEqual(fresh);
    clock.advance(1);
    for (const tf of TIMEFRAMES) expect(feed.lookup("STL", tf, clock()), tf).toEqual({ ok: false, reason: "stale" });
    // The freshness survives a restart: it is read from the store, not reset.
    expect(allLookups(await loadedFeed(clock), "STL", clock())).toEqual(allLookups(feed, "STL", clock()));
    // A rejected update is not a sign of life.
    expect(await feed.ingest([{ ...closedUpdate("STL", base[0]!), tf: "1h", close: -1 }])).toMatchObject({
      rejected: 1,
    });
    expect(feed.lookup("STL", "1h", clock())).toEqual({ ok: false, reason: "stale" });

    // A forming update refreshes it; its close is the price.
    const last = base[base.length - 1]!;
    const forming: Candle = {
      openTime: last.openTime + H,
      open: last.close,
      high: last.close * 1.01,
      low: last.close * 0.995,
      close: last.close * 1.005,
      volume: 1,
    };
    await feed.ingest([closedUpdate("STL", forming, false)]);
    const now = feed.lookup("STL", "1h", clock());
    expect(now).toEqual(expectedLookup("STL", base, "1h", forming));
    expect(now.ok && now.reading.price).toBe(forming.close);
    expect(allLookups(await loadedFeed(clock), "STL", clock())).toEqual(allLookups(feed, "STL", clock()));
    clock.advance(STALE_AFTER_MS + 1);
    expect(feed.lookup("STL", "4h", clock())).toEqual({ ok: false, reason: "stale" });
  });

  it(
    "never-seen coins are unknown_symbol; known coins without " + "enough candles for a timeframe are no_data",
    async () => {
      const clock = createTestClock();
      const feed = await loadedFeed(clock);
      for (const tf of TIMEFRAMES)
        expect(feed.lookup("NOPE", tf, clock()), tf).toEqual({ ok: false, reason: "unknown_symbol" });

      // Hours 00..12 of a day: 13 closed candles, ATR(14) not defined yet.
      const base = walk(9, 40, Date.UTC(2026, 4, 1));
      await feed.ingest(base.slice(0, 13).map((c) => closedUpdate("FEW", c)));
      for (const tf of TIMEFRAMES)
        expect(feed.lookup("FEW", tf, clock()), tf).toEqual({ ok: false, reason: "no_data" });
      expect(allLookups(await loadedFeed(clock), "FEW", clock())).toEqual(allLookups(feed, "FEW", clock()));

      // A forming 14th candle is not history: still no data, on every timeframe.
      const forming14: Candle = {
        ...base[13]!,
        close: base[13]!.open,
        high: Math.max(base[13]!.high, base[13]!.open),
        volume: 0.5,
      };
      await feed.ingest([closedUpdate("FEW", forming14, false)]);
      for (const tf of TIMEFRAMES)
        expect(feed.lookup("FEW", tf, clock()), tf).toEqual({ ok: false, reason: "no_data" });

      // The 14th closed candle defines ATR on 1h; 4h (3 closed + a partial) and 1d still have no data.
      await feed.ingest([closedUpdate("FEW", base[13]!)]);
      expect(feed.lookup("FEW", "1h", clock())).toEqual(expectedLookup("FEW", base.slice(0, 14), "1h"));
      expect(feed.lookup("FEW", "1h", clock()).ok).toBe(true);
      for (const tf of ["15m", "30m", "4h", "1d"] as const)
        expect(feed.lookup("FEW", tf, clock()), tf).toEqual({ ok: false, reason: "no_data" });
    },
  );
});
