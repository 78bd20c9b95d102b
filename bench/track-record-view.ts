/**
 * Per-view cost of a chart page's data (candles, events, levels and the track record) for BTC
 * 1h, imported from the shared real candles through the MarketFeed into a fresh database
 * (PGlite in memory; with `postgres` as the argument, a fresh database on the
 * benchmarks' PostgreSQL, BENCH_DATABASE_URL or 127.0.0.1:5432).
 *
 *   node bench/track-record-view.ts [pglite|postgres]        (needs ../shared/data/candles)
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { benchDatabase } from "./server-process.ts";
import { openDb, migrateDb } from "../src/db/client.ts";
import { MarketFeed } from "../src/market/feed.ts";
import { readCandleFile } from "../src/market/csv-candles.ts";
import { loadChartData } from "../src/web/chart-data.ts";

const FILE = fileURLToPath(new URL("../../shared/data/candles/BTCUSDT_1h.csv.gz", import.meta.url));
const VIEWS = 20;

/** Median milliseconds of `VIEWS` sequential loads of the BTC 1h chart page's data. */
export async function benchTrackRecordView(driver: "pglite" | "postgres"): Promise<string> {
  if (!existsSync(FILE)) return "| track record view | skipped: ../shared/data/candles is absent | |";
  const database = driver === "postgres" ? await benchDatabase() : null;
  const db = await openDb({ databaseUrl: database?.url ?? "", dataDir: "memory://", poolSize: 4 });
  try {
    await migrateDb(db);
    const feed = new MarketFeed({ db, clock: Date.now, logger: pino({ level: "silent" }), staleAfterMs: 1e12, alertMaxDelayMs: 0 });
    await feed.ingest(readCandleFile(FILE, "BTC", "1h"));
    const times: number[] = [];
    for (let i = 0; i < VIEWS; i++) {
      const started = performance.now();
      await loadChartData(db, "BTC", "1h");
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return `| BTC 1h chart page data on ${driver}, per view (median of ${VIEWS}; first ${times[0]!.toFixed(1)} ms) | ${times[VIEWS >> 1]!.toFixed(1)} ms |`;
  } finally {
    await db.close();
    await database?.drop();
  }
}

if (import.meta.main) console.log(await benchTrackRecordView(process.argv[2] === "postgres" ? "postgres" : "pglite"));
