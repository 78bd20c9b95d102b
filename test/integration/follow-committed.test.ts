/**
 * A follower steps what another process committed instead of reloading it (PGlite by default,
 * Postgres with DATABASE_URL): after every commit, with forming updates, closes, candles closed
 * by the next one and gaps, its answers are exactly the writer's and a full load's; reads that
 * finish out of order never move it back or step a candle twice; and a coin whose stepped state
 * disagrees with the stored checkpoints is reloaded in full.
 */
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DbHandle } from "../../src/db/client.ts";
import type { Candle } from "../../src/engine/index.ts";
import { MarketFeed } from "../../src/market/feed.ts";
import { TIMEFRAMES } from "../../src/market/timeframes.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { ingestHistory } from "../support/feed-history.ts";
import { seededNormal } from "../support/seeded-random.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { createTestClock } from "../support/test-server.ts";

const M15 = 15 * 60_000;
const COINS = ["FOLA", "FOLB", "FOLC"];
const HISTORY = 200;
const LIVE = 40;
/** Candles after the live ones, for the tests that follow the first. */
const LATER = 4;
const clock = createTestClock(Date.parse("2026-11-21T00:00:00Z"));
const start = clock() - (HISTORY + LIVE + LATER + 2) * M15;

/** 15m candles of a seeded random walk, per coin. */
function randomWalk(seed: number, count: number): Candle[] {
  const normal = seededNormal(seed);
  const out: Candle[] = [];
  let level = 50 + seed * 10;
  for (let i = 0; i < count; i++) {
    const open = level;
    level = Math.max(1, level * (1 + 0.01 * normal()));
    out.push({
      openTime: start + i * M15,
      open,
      high: Math.max(open, level) * (1 + 0.003 * Math.abs(normal())),
      low: Math.min(open, level) * (1 - 0.003 * Math.abs(normal())),
      close: level,
      volume: 1 + i,
    });
  }
  return out;
}

const series = new Map(COINS.map((symbol, i) => [symbol, randomWalk(i + 1, HISTORY + LIVE + LATER)]));
const update = (symbol: string, c: Candle, closed: boolean): CandleUpdate => ({ symbol, tf: "15m", ...c, closed });

/**
 * The follower's database: it hears no notices but the ones a test delivers, and a read-only
 * transaction can be made to hand back its result only when the test says (a read that took
 * its snapshot early and finishes late).
 */
function controlledHandle(handle: DbHandle) {
  const holds: { held: Promise<void>; read: () => void }[] = [];
  let onNotice: (payload: string) => void = () => {};
  const db = new Proxy(handle.db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop !== "transaction") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<DbHandle["db"]["transaction"]>) => {
        const readOnly = args[1]?.accessMode === "read only";
        const hold = readOnly ? holds.shift() : undefined;
        const result = await target.transaction(...args);
        hold?.read();
        await hold?.held;
        return result;
      };
    },
  });
  const controlled = Object.create(handle, {
    db: { get: () => db },
    listen: { value: async (_channel: string, listener: (payload: string) => void) => void (onNotice = listener) },
  }) as DbHandle;
  return {
    handle: controlled,
    /** The next read-only transaction's result waits for `release`; `read` resolves once it has read. */
    holdNextRead(): { release: () => void; read: Promise<void> } {
      let release!: () => void;
      let read!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const done = new Promise<void>((resolve) => (read = resolve));
      holds.push({ held, read });
      return { release, read: done };
    },
    notice: (symbols: string[]) => onNotice(JSON.stringify({ writer: "the-writer", symbols })),
  };
}

let db: TestDb;
let writer: MarketFeed;
let follower: MarketFeed;
let control: ReturnType<typeof controlledHandle>;
const logs: { msg: string; stepped?: number; reloaded?: number }[] = [];
const changed: ((symbols: readonly string[]) => void)[] = [];

function plainFeed(): MarketFeed {
  return new MarketFeed({
    db: db.handle,
    clock,
    logger: pino({ level: "silent" }),
    staleAfterMs: 1e12,
    alertMaxDelayMs: 0,
  });
}

/** Every coin and timeframe's lookup of one feed. */
function answers(f: MarketFeed) {
  return COINS.flatMap((symbol) => TIMEFRAMES.map((tf) => [symbol, tf, f.lookup(symbol, tf, clock())]));
}

async function freshAnswers() {
  const fresh = plainFeed();
  await fresh.load();
  return answers(fresh);
}

async function catchUp(): Promise<void> {
  expect(await follower.catchUp(writer.versions(COINS), Date.now() + 60_000)).toBe(true);
}

/** Resolves when the follower next tells that its readings of these coins changed. */
function nextChange(): Promise<readonly string[]> {
  return new Promise((resolve) => changed.push(resolve));
}

function followed(): { stepped: number; reloaded: number } {
  const lines = logs.filter((l) => l.msg === "market: followed coins another process committed");
  logs.length = 0;
  return lines.reduce(
    (sum, l) => ({ stepped: sum.stepped + (l.stepped ?? 0), reloaded: sum.reloaded + (l.reloaded ?? 0) }),
    { stepped: 0, reloaded: 0 },
  );
}

beforeAll(async () => {
  db = await createTestDb();
  writer = plainFeed();
  await writer.load();
  await ingestHistory(writer, series, HISTORY, (symbol, c) => update(symbol, c, true));
  control = controlledHandle(db.handle);
  const logger = pino({ level: "debug" }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  follower = new MarketFeed({
    db: control.handle,
    clock,
    logger,
    staleAfterMs: 1e12,
    alertMaxDelayMs: 0,
    onReadingsChanged: (symbols) => {
      for (const resolve of changed.splice(0)) resolve(symbols);
    },
  });
  await follower.load();
});

afterAll(async () => {
  await db?.drop();
});

describe("a follower stepping committed candles", () => {
  it("answers, after every commit, exactly what the writer and a full load answer, without reloading", async () => {
    logs.length = 0;
    for (let i = HISTORY; i < HISTORY + LIVE; i++) {
      const [a, b, c] = COINS.map((symbol) => series.get(symbol)![i]!);
      // FOLA: a forming price, then its close. FOLB: a forming price, closed by the next candle's
      // first update (the writer closes it with the forming values). FOLC: every fifth candle never sent.
      await writer.ingest([update("FOLA", { ...a!, close: a!.open }, false)]);
      await catchUp();
      expect(answers(follower)).toEqual(answers(writer));
      await writer.ingest([update("FOLA", a!, true), update("FOLB", b!, false)]);
      if (i % 5 !== 0) await writer.ingest([update("FOLC", c!, true)]);
      await catchUp();
      expect(answers(follower)).toEqual(answers(writer));
      if (i % 10 === 0) expect(answers(follower)).toEqual(await freshAnswers());
    }
    expect(answers(follower)).toEqual(await freshAnswers());
    const { stepped, reloaded } = followed();
    expect(stepped).toBeGreaterThan(LIVE * 2);
    expect(reloaded).toBe(0);
    const [events] = await db.handle.rows<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM signal_events WHERE candle_open_time >= ${start + HISTORY * M15}`,
    );
    expect(events!.n).toBeGreaterThan(0);
  }, 300_000);

  it("a read that finishes after a newer one changes nothing, and overlapping reads step no candle twice", async () => {
    const next = (symbol: string, k: number) => series.get(symbol)![HISTORY + LIVE + k]!;
    // Both reads take their snapshot before either is applied: the older one (a call's) finishes last.
    const older = control.holdNextRead();
    await writer.ingest(COINS.map((s) => update(s, next(s, 0), true)));
    const olderDone = follower.catchUp(writer.versions(COINS), Date.now() + 60_000);
    await older.read;
    await writer.ingest(COINS.map((s) => update(s, next(s, 1), false)));
    const newer = nextChange();
    control.notice(COINS);
    await newer;
    expect(answers(follower)).toEqual(answers(writer));
    older.release();
    expect(await olderDone).toBe(true);
    expect(answers(follower)).toEqual(answers(writer));
    // Now the older read finishes first and the newer one, which read from the same close, after it.
    const first = control.holdNextRead();
    await writer.ingest(COINS.map((s) => update(s, next(s, 1), true)));
    const firstDone = nextChange();
    control.notice(COINS);
    await first.read;
    await writer.ingest(COINS.map((s) => update(s, next(s, 2), true)));
    const second = control.holdNextRead();
    const secondDone = follower.catchUp(writer.versions(COINS), Date.now() + 60_000);
    await second.read;
    first.release();
    await firstDone;
    second.release();
    expect(await secondDone).toBe(true);
    expect(answers(follower)).toEqual(answers(writer));
    expect(answers(follower)).toEqual(await freshAnswers());
    expect(followed().reloaded).toBe(0);
  }, 120_000);

  it("reloads in full a coin whose stepped state disagrees with the stored checkpoint, then steps again", async () => {
    const c = series.get("FOLA")![HISTORY + LIVE + 3]!;
    await writer.ingest([update("FOLA", c, false)]);
    // Another writer's checkpoint (a different ATR) with a new version: stepping cannot reach it.
    await db.handle.rows(sql`
      UPDATE series_state SET state = jsonb_set(state, '{atr}', to_jsonb((state->>'atr')::float8 * 2))
       WHERE symbol = 'FOLA' AND tf = '1h'`);
    await db.handle.rows(sql`UPDATE coins SET version = version + 1 WHERE symbol = 'FOLA'`);
    const [row] = await db.handle.rows<{ version: number | string }>(
      sql`SELECT version FROM coins WHERE symbol = 'FOLA'`,
    );
    expect(await follower.catchUp({ FOLA: Number(row!.version) }, Date.now() + 60_000)).toBe(true);
    expect(followed()).toEqual({ stepped: 0, reloaded: 1 });
    expect(answers(follower)).toEqual(await freshAnswers());
    expect(answers(follower)).not.toEqual(answers(writer));
    // Its 1h series does not step at this close: its (replaced) checkpoint stays the one reloaded.
    await writer.ingest([update("FOLA", c, true)]);
    await catchUp();
    expect(followed()).toEqual({ stepped: 1, reloaded: 0 });
  }, 120_000);
});
