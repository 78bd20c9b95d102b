/**
 * A follower's reloads read only what changed (PGlite by default, Postgres with DATABASE_URL):
 * forming updates write candle rows and no checkpoint, a close rewrites the checkpoints of the
 * series it stepped, and a process that follows another's commits through its checkpoint cache
 * answers, at every step, exactly what the writer answers and what a process loading everything
 * afresh answers (forming prices, derived timeframes' open candles, signals).
 */
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Candle } from "../../src/engine/index.ts";
import { MarketFeed } from "../../src/market/feed.ts";
import { TIMEFRAMES } from "../../src/market/timeframes.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { ingestHistory } from "../support/feed-history.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { createTestClock } from "../support/test-server.ts";

const M15 = 15 * 60_000;
const COINS = ["INCA", "INCB", "INCC"];
const clock = createTestClock(Date.parse("2026-11-20T00:00:00Z"));
/** 15m candles of a deterministic zigzag walk (breaks structure now and then), per coin. */
function walk(seed: number, from: number, count: number): Candle[] {
  const out: Candle[] = [];
  let level = 100 + seed * 7;
  for (let i = 0; i < count; i++) {
    const step = Math.sin((i + seed) / 3) * 2 + (((i * 7919 + seed * 104729) % 13) - 6) * 0.3;
    const open = level;
    level = Math.max(1, level + step);
    out.push({
      openTime: from + i * M15,
      open,
      high: Math.max(open, level) + 0.4,
      low: Math.min(open, level) - 0.4,
      close: level,
      volume: 10 + i,
    });
  }
  return out;
}

const HISTORY = 300;
/** The first live close (INCA's, below) then ends a 30m and a 1h bucket too, not a 4h one. */
const LIVE = 39;
const start = clock() - (HISTORY + LIVE + 2) * M15;
const series = new Map(COINS.map((symbol, i) => [symbol, walk(i + 1, start, HISTORY + LIVE)]));
const logger = pino({ level: "silent" });
let db: TestDb;
let writer: MarketFeed;
let follower: MarketFeed;

function feed(): MarketFeed {
  return new MarketFeed({ db: db.handle, clock, logger, staleAfterMs: 1e12, alertMaxDelayMs: 0 });
}

const closed = (symbol: string, c: Candle): CandleUpdate => ({ symbol, tf: "15m", ...c, closed: true });

/** Every coin and timeframe's lookup of one feed. */
function answers(f: MarketFeed) {
  return COINS.flatMap((symbol) => TIMEFRAMES.map((tf) => [symbol, tf, f.lookup(symbol, tf, clock())]));
}

async function checkpointStamps(): Promise<Map<string, string>> {
  const rows = await db.handle.rows<{ key: string; xmin: string }>(
    sql`SELECT symbol || '/' || tf AS key, xmin::text AS xmin FROM series_state`,
  );
  return new Map(rows.map((r) => [r.key, r.xmin]));
}

beforeAll(async () => {
  db = await createTestDb();
  writer = feed();
  await writer.load();
  await ingestHistory(writer, series, HISTORY, closed);
  follower = feed();
  await follower.load();
});

afterAll(async () => {
  await db?.drop();
});

describe("incremental reloads", () => {
  it("forming updates rewrite no checkpoint; a close rewrites those of the series it stepped", async () => {
    const before = await checkpointStamps();
    expect(before.size).toBe(COINS.length * TIMEFRAMES.length);
    const next = series.get("INCA")![HISTORY]!;
    await writer.ingest([{ ...closed("INCA", next), close: next.open + 0.1, closed: false }]);
    expect(await checkpointStamps()).toEqual(before);
    await writer.ingest([closed("INCA", next)]);
    const after = await checkpointStamps();
    // The base series stepped; a derived one steps only when its bucket closes.
    expect(after.get("INCA/15m")).not.toBe(before.get("INCA/15m"));
    expect(after.get("INCB/15m")).toBe(before.get("INCB/15m"));
    const derivedStepped = TIMEFRAMES.filter(
      (tf) => tf !== "15m" && after.get(`INCA/${tf}`) !== before.get(`INCA/${tf}`),
    );
    const buckets: Record<string, number> = { "30m": 2, "1h": 4, "4h": 16, "1d": 96 };
    const closesBucket = (tf: string) => (next.openTime + M15) % (M15 * buckets[tf]!) === 0;
    expect(derivedStepped).toEqual(TIMEFRAMES.filter((tf) => tf !== "15m" && closesBucket(tf)));
    expect(derivedStepped).toEqual(["30m", "1h"]);
    // Forming-only coins were not touched at all.
    for (const tf of TIMEFRAMES) expect(after.get(`INCC/${tf}`)).toBe(before.get(`INCC/${tf}`));
  });

  it("a follower answers what the writer and a fresh load answer after every commit", async () => {
    for (let i = HISTORY; i < HISTORY + LIVE; i++) {
      for (const symbol of COINS) {
        const c = series.get(symbol)![i]!;
        // INCA's candle at HISTORY was closed above; the others get theirs now.
        if (!(symbol === "INCA" && i === HISTORY)) {
          // Two forming prices, each its own commit (the follower reloads between them), then the close.
          for (const f of [0.3, 0.7]) {
            const forming = { ...closed(symbol, c), close: c.open + (c.close - c.open) * f, closed: false };
            await writer.ingest([forming]);
            expect(await follower.catchUp(writer.versions(COINS), Date.now() + 30_000)).toBe(true);
            expect(answers(follower)).toEqual(answers(writer));
          }
          await writer.ingest([closed(symbol, c)]);
        }
      }
      expect(await follower.catchUp(writer.versions(COINS), Date.now() + 30_000)).toBe(true);
      expect(answers(follower)).toEqual(answers(writer));
      if (i % 20 === 0 || i === HISTORY + LIVE - 1) {
        const fresh = feed();
        await fresh.load();
        expect(answers(fresh)).toEqual(answers(writer));
      }
    }
    // The walk did change signals along the way: the comparison covered events, not only prices.
    const [events] = await db.handle.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM signal_events`);
    expect(events!.n).toBeGreaterThan(0);
  }, 300_000);
});
