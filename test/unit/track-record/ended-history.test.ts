/**
 * The ended-signals view of a series (track-record/ended-history.ts), on hand-made data: the signals
 * before the one in force 24 h ago, the track record and backtest as of that moment, the price
 * history untouched, no levels; nothing newer than the delay changes it, and one copy is kept
 * while its cutoff stays put.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_FEE_PCT, runBacktest } from "../../../src/track-record/backtest.ts";
import type { ChartData, StoredEvent } from "../../../src/track-record/chart-data.ts";
import { endedHistoryOf } from "../../../src/track-record/ended-history.ts";
import { computeTrackRecord } from "../../../src/track-record/track-record.ts";

const H = 3_600_000;
const T = Date.parse("2026-11-01T00:00:00Z");

/** A 1h series: closes rise 100, 101, 102 … and the given events (hour, signal, price, defense). */
function series(hours: number, events: Array<[number, StoredEvent["signal"], number, number | null]>): ChartData {
  const candles = Array.from({ length: hours }, (_, i) => ({
    openTime: T + i * H,
    open: 100 + i,
    high: 101 + i,
    low: 99 + i,
    close: 100 + i,
    volume: 1,
  }));
  const stored: StoredEvent[] = events.map(([h, signal, price, defense]) => ({
    id: `X-1h-${T + h * H}`,
    signal,
    price,
    defense,
    candleOpenTime: T + h * H,
  }));
  const closes = {
    times: Float64Array.from(candles, (c) => c.openTime),
    closes: Float64Array.from(candles, (c) => c.close),
  };
  const record = computeTrackRecord(stored, candles);
  return {
    symbol: "X",
    tf: "1h",
    timeframes: ["1h"],
    candles,
    events: stored,
    levels: {
      asOf: candles.at(-1)!.openTime,
      signal: stored.at(-1)!.signal,
      close: candles.at(-1)!.close,
      defense: stored.at(-1)!.defense,
      arming: null,
    },
    record,
    closes,
    backtest: runBacktest(record.trades, closes, DEFAULT_FEE_PCT),
    totalCandles: candles.length,
    demo: false,
  };
}

describe("endedHistoryOf", () => {
  // LONG set at 2 h (in force from 3 h), SHORT at 10 h (from 11 h), NONE at 20 h (from 21 h), LONG at 40 h (from 41 h).
  const data = series(45, [
    [2, "LONG", 102, 95],
    [10, "SHORT", 110, 125],
    [20, "NONE", 120, null],
    [40, "LONG", 140, 130],
  ]);
  // 24 h before now is 21 h 30 min in: the NONE (in force from 21 h) was in force then.
  const now = T + 45 * H + 30 * 60_000;

  it("shows the signals that ended before the one in force 24 h ago, as of just before it began", () => {
    const { data: ended, until } = endedHistoryOf(data, now);
    expect(until).toBe(T + 21 * H - 1);
    expect(ended.events.map((e) => e.signal)).toEqual(["LONG", "SHORT"]);
    expect(ended.levels).toBeNull();
    // Price history is not cut: every candle is drawn.
    expect(ended.candles).toBe(data.candles);
    expect(ended.totalCandles).toBe(45);
    // Closes up to the last candle closed by then (the one opened 20 h in closed at 21 h, after the cut).
    expect(Array.from(ended.closes.times)).toEqual(Array.from({ length: 20 }, (_, i) => T + i * H));
  });

  it("recomputes the record over what is shown: the LONG ended at the SHORT, the SHORT is open as of then", () => {
    const { data: ended } = endedHistoryOf(data, now);
    expect(ended.record.trades.map((t) => [t.signal, t.exitReason, t.exitPrice])).toEqual([
      ["LONG", "opposite", 110],
      ["SHORT", "open", 119],
    ]);
    expect(ended.backtest.trades).toBe(1);
    expect(ended.backtest.to).toBe(T + 19 * H);
    // The whole history says otherwise: the SHORT ended at the NONE, and the last LONG is open.
    expect(data.record.trades.map((t) => t.exitReason)).toEqual(["opposite", "invalidation", "open"]);
  });

  it("does not change with anything newer than the delay, and keeps one copy while the cutoff stays", () => {
    const first = endedHistoryOf(data, now);
    expect(endedHistoryOf(data, now + 20 * 60_000).data).toBe(first.data);
    const more = series(50, [
      [2, "LONG", 102, 95],
      [10, "SHORT", 110, 125],
      [20, "NONE", 120, null],
      [40, "LONG", 140, 130],
      [44, "SHORT", 144, 150],
    ]);
    const later = endedHistoryOf(more, now);
    expect(later.until).toBe(first.until);
    expect(later.data.events).toEqual(first.data.events);
    expect(later.data.record).toEqual(first.data.record);
    expect(later.data.backtest).toEqual(first.data.backtest);
  });

  it("moves on once the delay passes the next signal's start", () => {
    // 24 h before is now 41 h 30 min in: the LONG of 40 h was in force; the NONE ended at its start.
    const { data: ended, until } = endedHistoryOf(data, T + 65 * H + 30 * 60_000);
    expect(until).toBe(T + 41 * H - 1);
    expect(ended.events.map((e) => e.signal)).toEqual(["LONG", "SHORT", "NONE"]);
    expect(ended.record.trades.map((t) => t.exitReason)).toEqual(["opposite", "invalidation"]);
  });

  it("shows nothing while no signal began more than 24 h ago", () => {
    const { data: ended } = endedHistoryOf(data, T + 20 * H);
    expect(ended.events).toEqual([]);
    expect(ended.record.trades).toEqual([]);
    expect(ended.levels).toBeNull();
  });
});
