/**
 * Import of all twelve real coins (1h CSV, ~384,000 candles, plus the derived 4h and 1d) into
 * Postgres through the same MarketFeed the server uses. Target: under 30 s on 2 cores.
 *
 *   node bench/import.ts        (needs ../shared/data/candles and PostgreSQL)
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { migrateDb, openDb } from "../src/db/client.ts";
import { readCandleFile } from "../src/market/csv-candles.ts";
import { MarketFeed } from "../src/market/feed.ts";
import { countCandles } from "../src/market/store.ts";
import { benchDatabase } from "./server-process.ts";

const DATA = fileURLToPath(new URL("../../shared/data/candles/", import.meta.url));

/** Imports every *USDT_1h.csv.gz into a fresh database; returns a Markdown table. */
export async function benchImport(): Promise<string> {
  if (!existsSync(DATA)) return "| import | skipped: ../shared/data/candles is absent | |";
  const files = readdirSync(DATA)
    .filter((f) => f.endsWith("USDT_1h.csv.gz"))
    .sort();
  const database = await benchDatabase();
  const db = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: 4 });
  try {
    await migrateDb(db);
    const feed = new MarketFeed({
      db,
      clock: Date.now,
      logger: pino({ level: "silent" }),
      staleAfterMs: 1e12,
      alertMaxDelayMs: 0,
    });
    const started = performance.now();
    let accepted = 0;
    for (const file of files) {
      const symbol = file.replace("USDT_1h.csv.gz", "");
      const summary = await feed.ingest(readCandleFile(path.join(DATA, file), symbol, "1h"));
      accepted += summary.accepted;
    }
    const seconds = (performance.now() - started) / 1000;
    const counts = await countCandles(
      db,
      files.map((f) => f.replace("USDT_1h.csv.gz", "")),
    );
    return [
      `| measure | value | target |`,
      `|---|---|---|`,
      `| coins / 1h candles accepted | ${files.length} / ${accepted} | 12 / ~384,000 |`,
      `| rows stored (1h / 4h / 1d) | ${counts["1h"]} / ${counts["4h"]} / ${counts["1d"]} | |`,
      `| import time | ${seconds.toFixed(1)} s | < 30 s |`,
      `| rate | ${Math.round(accepted / seconds)} candles/s | |`,
    ].join("\n");
  } finally {
    await db.close();
    await database.drop();
  }
}

if (import.meta.main) console.log(await benchImport());
