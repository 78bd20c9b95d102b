/**
 * The track record on hand-made events and candles, one rule per test
 * (docs/track-record.md): entry at the confirmed close; exit at the first later close at or
 * through the event's own defense, or at the next opposite or NONE event; open trades valued at
 * the last close and kept out of win rates. The backtest over these trades: backtest.test.ts.
 */
import { describe, expect, it } from "vitest";
import { computeTrackRecord, type TrackCandle, type TrackEvent } from "../../../src/track-record/track-record.ts";

const H = 3_600_000;
const t = (i: number) => Date.UTC(2024, 0, 1) + i * H;

/** Candles at t(0), t(1), … with these closes. */
function closes(...values: number[]): TrackCandle[] {
  return values.map((close, i) => ({ openTime: t(i), close }));
}

function ev(signal: TrackEvent["signal"], at: number, price: number, defense: number | null = null): TrackEvent {
  return { signal, candleOpenTime: t(at), price, defense };
}

describe("exits", () => {
  it("a long leaves at the first later close at or below its defense, at that close", async () => {
    const record = computeTrackRecord([ev("LONG", 0, 100, 95)], closes(100, 98, 96, 94, 90));
    expect(record.trades).toHaveLength(1);
    expect(record.trades[0]).toMatchObject({ exitReason: "defense", exitTime: t(3), exitPrice: 94, entryPrice: 100 });
    expect(record.trades[0]!.resultPct).toBeCloseTo(-6, 12);
  });

  it("a close exactly at the defense is an exit ('at or through')", () => {
    const record = computeTrackRecord([ev("STRONG_LONG", 0, 100, 95)], closes(100, 95, 120));
    expect(record.trades[0]).toMatchObject({ exitReason: "defense", exitPrice: 95, exitTime: t(1) });
  });

  it("a short mirrors it: out at the first close at or above its defense, result mirrored", () => {
    const record = computeTrackRecord([ev("SHORT", 0, 100, 105)], closes(100, 102, 106, 90));
    expect(record.trades[0]).toMatchObject({ direction: -1, exitReason: "defense", exitPrice: 106 });
    expect(record.trades[0]!.resultPct).toBeCloseTo(-6, 12);
    const winner = computeTrackRecord([ev("STRONG_SHORT", 0, 100, 105), ev("LONG", 2, 80, 70)], closes(100, 90, 80));
    expect(winner.trades[0]).toMatchObject({ exitReason: "opposite", exitPrice: 80 });
    expect(winner.trades[0]!.resultPct).toBeCloseTo(20, 12);
  });

  it("the entry candle itself never ends the trade; only later closes do", () => {
    // A stored event whose own close is already through its defense cannot happen in the
    // engine, but the rule must still only look at later candles.
    const record = computeTrackRecord([ev("LONG", 1, 100, 101)], closes(90, 100, 102, 100.5));
    expect(record.trades[0]).toMatchObject({ exitReason: "defense", exitTime: t(3) });
  });

  it("an opposite signal ends a long at the signal's price", () => {
    const record = computeTrackRecord(
      [ev("LONG", 0, 100, 90), ev("SHORT", 2, 110, 115)],
      closes(100, 105, 110, 108, 100),
    );
    expect(record.trades[0]).toMatchObject({ exitReason: "opposite", exitTime: t(2), exitPrice: 110 });
    expect(record.trades[0]!.resultPct).toBeCloseTo(10, 12);
  });

  it("a NONE invalidation ends the trade at its price even when the stored defense was not reached", () => {
    const record = computeTrackRecord([ev("LONG", 0, 100, 95), ev("NONE", 2, 96)], closes(100, 97, 96, 80));
    expect(record.trades).toHaveLength(1);
    expect(record.trades[0]).toMatchObject({ exitReason: "invalidation", exitTime: t(2), exitPrice: 96 });
    expect(record.trades[0]!.resultPct).toBeCloseTo(-4, 12);
  });

  it("whichever comes first: a defense close before the opposite signal wins; one after it does not count", () => {
    const early = computeTrackRecord([ev("LONG", 0, 100, 95), ev("SHORT", 3, 90, 99)], closes(100, 94, 93, 90));
    expect(early.trades[0]).toMatchObject({ exitReason: "defense", exitTime: t(1), exitPrice: 94 });
    const late = computeTrackRecord([ev("LONG", 0, 100, 95), ev("SHORT", 1, 97, 99)], closes(100, 97, 90, 80));
    expect(late.trades[0]).toMatchObject({ exitReason: "opposite", exitTime: t(1), exitPrice: 97 });
  });

  it("on the terminal event's own candle both rules give the same close, and 'defense' is the reason", () => {
    const record = computeTrackRecord([ev("LONG", 0, 100, 95), ev("NONE", 2, 94)], closes(100, 99, 94));
    expect(record.trades[0]).toMatchObject({ exitReason: "defense", exitTime: t(2), exitPrice: 94 });
  });

  it("a later signal in the same direction does not end the earlier trade; each keeps its own defense", () => {
    const events = [ev("LONG", 0, 100, 90), ev("STRONG_LONG", 1, 110, 100), ev("SHORT", 3, 95, 105)];
    const record = computeTrackRecord(events, closes(100, 110, 99, 95, 94));
    expect(record.trades.map((x) => [x.signal, x.exitReason, x.exitPrice])).toEqual([
      ["LONG", "opposite", 95],
      ["STRONG_LONG", "defense", 99],
      ["SHORT", "open", 94],
    ]);
  });

  it("a trade with no exit yet is open, valued at the last close", () => {
    const record = computeTrackRecord([ev("SHORT", 1, 100, 110)], closes(101, 100, 96, 95));
    expect(record.trades[0]).toMatchObject({ exitReason: "open", exitTime: t(3), exitPrice: 95 });
    expect(record.trades[0]!.resultPct).toBeCloseTo(5, 12);
    // With no later candle at all it is valued at its own entry.
    const fresh = computeTrackRecord([ev("LONG", 3, 95, 90)], closes(101, 100, 96, 95));
    expect(fresh.trades[0]).toMatchObject({ exitReason: "open", exitPrice: 95, resultPct: 0 });
  });

  it("a directional event with no stored defense leaves only at a signal", () => {
    const record = computeTrackRecord([ev("LONG", 0, 100, null), ev("NONE", 3, 50)], closes(100, 60, 55, 50));
    expect(record.trades[0]).toMatchObject({ exitReason: "invalidation", exitPrice: 50 });
  });

  it("takes events in time order whatever order they come in", () => {
    const record = computeTrackRecord([ev("SHORT", 2, 110, 115), ev("LONG", 0, 100, 90)], closes(100, 105, 110, 108));
    expect(record.trades.map((x) => x.signal)).toEqual(["LONG", "SHORT"]);
    expect(record.trades[0]).toMatchObject({ exitReason: "opposite", exitPrice: 110 });
  });
});

describe("statistics per signal type", () => {
  it("counts trades, wins, win rate and average result of closed trades; open trades are counted but not rated", () => {
    const events = [
      ev("LONG", 0, 100, 90), // +10 at the SHORT
      ev("SHORT", 1, 110, 120), // −? at the LONG below: 110 → 121 (defense close) = −10%
      ev("LONG", 3, 121, 100), // 121 → 121 at NONE: 0%, not a win
      ev("NONE", 4, 121),
      ev("LONG", 5, 100, 50), // open at 105: +5%, not rated
    ];
    const record = computeTrackRecord(events, closes(100, 110, 121, 121, 121, 100, 105));
    const long = record.bySignal.find((s) => s.signal === "LONG")!;
    expect(long).toMatchObject({ count: 3, closed: 2, open: 1, wins: 1, winRatePct: 50 });
    expect(long.avgResultPct).toBeCloseTo(5, 12);
    const short = record.bySignal.find((s) => s.signal === "SHORT")!;
    expect(short).toMatchObject({ count: 1, closed: 1, wins: 0, winRatePct: 0 });
    expect(short.avgResultPct).toBeCloseTo(-10, 12);
    expect(record.bySignal.find((s) => s.signal === "STRONG_LONG")).toMatchObject({
      count: 0,
      winRatePct: null,
      avgResultPct: null,
    });
    expect(record.all).toMatchObject({ signal: "ALL", count: 4, closed: 3, open: 1, wins: 1 });
    expect(record.all.winRatePct).toBeCloseTo(100 / 3, 12);
    expect(record.all.avgResultPct).toBeCloseTo(0, 12);
  });

  it("lists the four directional types in a fixed order, and is empty with no events", () => {
    const record = computeTrackRecord([], closes(1, 2, 3));
    expect(record.bySignal.map((s) => s.signal)).toEqual(["STRONG_LONG", "LONG", "SHORT", "STRONG_SHORT"]);
    expect(record.trades).toEqual([]);
    expect(record.all).toMatchObject({ count: 0, winRatePct: null, avgResultPct: null });
  });
});
