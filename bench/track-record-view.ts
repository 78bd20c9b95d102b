/**
 * Per-view cost of a chart page's data (candles, events, levels, the track record and the
 * backtest) for BTC 1h, computed on every view (loadChartData) and served by the cache the
 * pages use (ChartDataCache: a stamp query per view, a computation per close), and of the
 * ended-signals view that /track-record and members without current access get (derived from
 * the cached copy: kept while its cut stays, recomputed when the cut moves), over the shared
 * real candles imported through the MarketFeed into a fresh database
 * (PGlite in memory; with `postgres` as the argument, a fresh database on the
 * benchmarks' PostgreSQL, BENCH_DATABASE_URL or 127.0.0.1:5432).
 *
 *   node bench/track-record-view.ts [pglite|postgres]        (needs ../shared/data/candles)
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { migrateDb, openDb } from "../src/db/client.ts";
import { readCandleFile } from "../src/market/csv-candles.ts";
import { MarketFeed } from "../src/market/feed.ts";
import { ChartDataCache, loadChartData } from "../src/track-record/chart-data.ts";
import { endedHistoryOf } from "../src/track-record/ended-history.ts";
import { benchDatabase } from "./server-process.ts";

const FILE = fileURLToPath(new URL("../../shared/data/candles/BTCUSDT_1h.csv.gz", import.meta.url));
const VIEWS = 20;

/** Median milliseconds of `VIEWS` sequential loads of the BTC 1h chart page's data, uncached and cached. */
export async function benchTrackRecordView(driver: "pglite" | "postgres"): Promise<string> {
  if (!existsSync(FILE)) return "| track record view | skipped: ../shared/data/candles is absent | |";
  const database = driver === "postgres" ? await benchDatabase() : null;
  const db = await openDb({ databaseUrl: database?.url ?? "", dataDir: "memory://", poolSize: 4 });
  try {
    await migrateDb(db);
    const feed = new MarketFeed({
      db,
      clock: Date.now,
      logger: pino({ level: "silent" }),
      staleAfterMs: 1e12,
      alertMaxDelayMs: 0,
    });
    await feed.ingest(readCandleFile(FILE, "BTC", "1h"));
    const cache = new ChartDataCache(db);
    await cache.get("BTC", "1h"); // the one computation after the import's last close
    const uncached = await medianMs(() => loadChartData(db, "BTC", "1h"));
    const cached = await medianMs(() => cache.get("BTC", "1h"));
    const now = Date.now();
    const endedKept = await medianMs(async () => endedHistoryOf((await cache.get("BTC", "1h"))!, now));
    // A new copy of the data each time: the cut is derived again, as when it moves past a close.
    const data = (await cache.get("BTC", "1h"))!;
    const endedMoved = await medianMs(async () => endedHistoryOf({ ...data }, now));
    return [
      `| BTC 1h chart page data on ${driver}, per view (median of ${VIEWS}) | ms |`,
      `|---|---|`,
      `| computed on every view (before) | ${uncached.toFixed(1)} |`,
      `| from the cache (after) | ${cached.toFixed(2)} |`,
      `| ended-signals view from the cache, cut unchanged | ${endedKept.toFixed(2)} |`,
      `| ended-signals view when the cut moves (once per close) | ${endedMoved.toFixed(1)} |`,
    ].join("\n");
  } finally {
    await db.close();
    await database?.drop();
  }
}

async function medianMs(view: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < VIEWS; i++) {
    const started = performance.now();
    await view();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[VIEWS >> 1]!;
}

if (import.meta.main) console.log(await benchTrackRecordView(process.argv[2] === "postgres" ? "postgres" : "pglite"));
