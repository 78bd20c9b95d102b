/**
 * The landing page's example answer is read from the store per view (two index reads a series)
 * instead of from every series' chart data kept in memory: it must be the same signal that the
 * ended-signals view of each series (track-record/ended-history.ts, endedHistoryUntil) shows
 * last, with the same choice of series (BTC 4h, BTC 1h, ETH 4h when real, else the first real
 * series in symbol and timeframe order, a demo coin only when nothing real has one).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENDED_SIGNAL_DELAY_MS, endedHistoryUntil } from "../../src/accounts/entitlement.ts";
import { derivedTimeframes, TIMEFRAME_MS, type Timeframe } from "../../src/market/timeframes.ts";
import { exampleAnswer } from "../../src/track-record/public-showcase.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const H = 3_600_000;
const NOW = Date.parse("2026-11-20T08:00:00Z");
const HORIZON = NOW - ENDED_SIGNAL_DELAY_MS;

interface StoredEvent {
  id: string;
  symbol: string;
  tf: Timeframe;
  signal: string;
  price: number;
  candleOpenTime: number;
}

let tdb: TestDb;
let seq = 0;

async function addCoin(symbol: string, baseTf: Timeframe, demo: boolean): Promise<void> {
  await tdb.handle.rows(sql`INSERT INTO coins (symbol, base_tf, last_update_at, demo)
    VALUES (${symbol}, ${baseTf}, now(), ${demo})`);
}

/** An event whose signal comes into force `inForceFromHorizon` ms after the horizon (its candle's close). */
async function addEvent(symbol: string, tf: Timeframe, inForceFromHorizon: number): Promise<StoredEvent> {
  seq++;
  const candleOpenTime = HORIZON + inForceFromHorizon - TIMEFRAME_MS[tf];
  const event = { id: `ev-${seq}`, symbol, tf, signal: seq % 2 ? "LONG" : "SHORT", price: 100 + seq, candleOpenTime };
  await tdb.handle.rows(sql`INSERT INTO signal_events (id, symbol, tf, signal, price, defense, atr_pct,
      candle_open_time, live)
    VALUES (${event.id}, ${symbol}, ${tf}, ${event.signal}, ${event.price}, null, 1.5, ${candleOpenTime}, true)`);
  return event;
}

/** The last signal the ended-signals view of a series shows, as the chart pages compute it. */
function lastEnded(events: readonly StoredEvent[]): StoredEvent | undefined {
  const tfMs = TIMEFRAME_MS[events[0]!.tf];
  const until = endedHistoryUntil(
    NOW,
    events.map((e) => e.candleOpenTime + tfMs),
  );
  return events.filter((e) => e.candleOpenTime + tfMs <= until).at(-1);
}

beforeAll(async () => {
  tdb = await createTestDb(2);
});
afterAll(async () => tdb.drop());

describe("the landing page's example answer", () => {
  it("is the last signal of the series' ended view, never one in force at the horizon or after it", async () => {
    await addCoin("BTC", "1h", false);
    const earlier = await addEvent("BTC", "4h", -72 * H);
    const ended = await addEvent("BTC", "4h", -30 * H);
    const inForceAtHorizon = await addEvent("BTC", "4h", -2 * H);
    const current = await addEvent("BTC", "4h", 10 * H);
    const series = [earlier, ended, inForceAtHorizon, current];
    expect(lastEnded(series)?.id).toBe(ended.id);
    const example = await exampleAnswer(tdb.handle, NOW);
    expect(example).toMatchObject({ symbol: "BTC", tf: "4h", demo: false, asOf: ended.candleOpenTime + 4 * H });
    expect((example!.body.signals as Array<Record<string, unknown>>)[0]).toMatchObject({
      symbol: "BTC",
      signal: ended.signal,
      price: ended.price,
      atr_pct: 1.5,
    });
  });

  it("falls back to the first real series in symbol and timeframe order, a demo coin last", async () => {
    await tdb.handle.rows(sql`DELETE FROM signal_events`);
    await addCoin("AAA", "15m", true);
    await addCoin("ZED", "15m", false);
    // BTC 4h has only the signal in force at the horizon: nothing of it has ended.
    await addEvent("BTC", "4h", -3 * H);
    const demo = [await addEvent("AAA", "15m", -50 * H), await addEvent("AAA", "15m", -40 * H)];
    // ZED 15m has nothing in force by the horizon; ZED 1h has an ended signal.
    await addEvent("ZED", "15m", 5 * H);
    const zed = [await addEvent("ZED", "1h", -60 * H), await addEvent("ZED", "1h", -20 * H)];
    expect(lastEnded(demo)).toBeDefined();
    expect(derivedTimeframes("15m")).toContain("1h");
    const example = await exampleAnswer(tdb.handle, NOW);
    expect(example).toMatchObject({ symbol: "ZED", tf: "1h", demo: false, asOf: lastEnded(zed)!.candleOpenTime + H });

    // With no real series ended, the demo coin's example, marked as such.
    await tdb.handle.rows(sql`DELETE FROM signal_events WHERE symbol = 'ZED'`);
    const demoExample = await exampleAnswer(tdb.handle, NOW);
    expect(demoExample).toMatchObject({ symbol: "AAA", tf: "15m", demo: true });
    expect((demoExample!.body.signals as Array<Record<string, unknown>>)[0]).toMatchObject({
      price: lastEnded(demo)!.price,
      demo: true,
    });
  });

  it("is null while no series has an ended signal", async () => {
    await tdb.handle.rows(sql`DELETE FROM signal_events`);
    await addEvent("BTC", "4h", -1 * H);
    expect(await exampleAnswer(tdb.handle, NOW)).toBeNull();
  });
});
