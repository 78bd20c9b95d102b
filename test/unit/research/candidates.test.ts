import { describe, expect, it } from "vitest";
import { takenTrade } from "../../../bench/research/accounting.ts";
import type { CoinFrame } from "../../../bench/research/candidates.ts";
import {
  alignHigherDirection,
  clipTrades,
  higherTimeframeHoldTrades,
  PRINCIPLED,
  trailingReturnSign,
} from "../../../bench/research/candidates.ts";
import { weeklyCandles } from "../../../bench/research/series.ts";
import type { Candle } from "../../../src/engine/index.ts";
import type { TrackEvent } from "../../../src/track-record/track-record.ts";

const H = 3_600_000;
const DAY = 24 * H;
const NO_COSTS = { fee: 0, slippage: 0 };
const candle = (openTime: number, close: number): Candle => ({
  openTime,
  open: close,
  high: close,
  low: close,
  close,
  volume: 1,
});

describe("principled candidates: what each rule may read", () => {
  it("reads the higher timeframe only after its candle has closed (no look-ahead)", () => {
    // 1h candles from 00:00 to 08:00; 4h candles at 00:00 (direction 1) and 04:00 (direction −1).
    const lower = Array.from({ length: 9 }, (_, h) => candle(h * H, 100));
    const higher = [candle(0, 100), candle(4 * H, 100)];
    const aligned = alignHigherDirection(lower, H, higher, 4 * H, Int8Array.from([1, -1]));
    // Hours 0–2 close before 04:00: no 4h candle has closed. Hour 3 closes at 04:00 with the first
    // 4h candle; hour 7 closes at 08:00 with the second.
    expect([...aligned]).toEqual([0, 0, 0, 1, 1, 1, 1, -1, -1]);
    // Cutting the future off changes nothing that was already known.
    const prefix = alignHigherDirection(lower.slice(0, 6), H, higher.slice(0, 1), 4 * H, Int8Array.from([1]));
    expect([...prefix]).toEqual([...aligned.slice(0, 6)]);
  });

  it(
    "takes the trailing return from the close a whole look-back " + "earlier, and none before the history is that long",
    () => {
      const candles = [100, 90, 95, 120, 110, 80].map((c, d) => candle(d * DAY, c));
      // Look-back of 2 days: day 2 vs day 0 (95 < 100), day 3 vs day 1 (120 > 90), day 4 vs 2, day 5 vs 3.
      expect([...trailingReturnSign(candles, 2 * DAY)]).toEqual([0, 0, -1, 1, 1, -1]);
      // A gap in the data: the last close at or before the target time is used.
      const gappy = [candle(0, 100), candle(3 * DAY, 110), candle(4 * DAY, 90)];
      expect([...trailingReturnSign(gappy, 2 * DAY)]).toEqual([0, 1, -1]);
    },
  );

  it("builds Monday-based weeks from daily candles", () => {
    // 2024-01-04 (Thursday) to 2024-01-09 (Tuesday): the week of Monday 2024-01-01, then that of 2024-01-08.
    const start = Date.UTC(2024, 0, 4);
    const daily = [10, 12, 11, 9, 13, 14].map((c, d) => ({ ...candle(start + d * DAY, c), high: c + 1, low: c - 1 }));
    const weeks = weeklyCandles(daily);
    expect(weeks.map((w) => new Date(w.openTime).toISOString().slice(0, 10))).toEqual(["2024-01-01", "2024-01-08"]);
    expect(weeks[0]).toMatchObject({ open: 10, close: 9, high: 13, low: 8, volume: 4 });
    expect(weeks[1]).toMatchObject({ open: 13, close: 14, high: 15, low: 12, volume: 2 });
  });

  it("clips a trade to the runs where the rule allows it, entering and exiting at closes", () => {
    const closes = [100, 101, 102, 103, 104, 105, 106];
    const trade = takenTrade(1, 0, 6, closes, NO_COSTS);
    // Allowed at closes 0–1 and 4–5 (holding intervals 0→1, 1→2, 4→5, 5→6).
    const clipped = clipTrades([trade], closes, NO_COSTS, (_, k) => k <= 1 || k >= 4);
    expect(clipped.map((t) => [t.entryIndex, t.exitIndex, t.entryPrice, t.exitPrice])).toEqual([
      [0, 2, 100, 102],
      [4, 6, 104, 106],
    ]);
    expect(clipTrades([trade], closes, NO_COSTS, () => false)).toEqual([]);
    expect(clipTrades([trade], closes, NO_COSTS, () => true)).toEqual([trade]);
  });
});

function frameOf(closes: readonly number[], higher: readonly number[], events: readonly TrackEvent[]): CoinFrame {
  return {
    coin: "BTC",
    timeframe: "1h",
    candles: closes.map((c, h) => candle(h * H, c)),
    events,
    selectionEvents: events,
    higherDirection: Int8Array.from(higher),
    trailingSign: new Map([[4, Int8Array.from(higher)]]),
  };
}

describe("(b) higher timeframe holds", () => {
  it("enters on a lower break in the higher direction and holds until the higher direction changes", () => {
    const closes = [100, 101, 102, 103, 104, 105, 106, 107, 108, 109];
    const higher = [0, 1, 1, 1, 1, 1, -1, -1, -1, -1];
    const events: TrackEvent[] = [
      // A long break while the higher timeframe is still flat: ignored.
      { signal: "LONG", price: 100, defense: 95, candleOpenTime: 0 },
      // A lower short against the higher long: ignored. Then a long break at hour 2: entry.
      { signal: "SHORT", price: 101, defense: 110, candleOpenTime: H },
      { signal: "LONG", price: 102, defense: 99, candleOpenTime: 2 * H },
      // The lower timeframe's own exit does not end the position.
      { signal: "NONE", price: 104, defense: null, candleOpenTime: 4 * H },
      // Hour 6: the higher timeframe turns short; exit, and a short break at the same close reverses.
      { signal: "STRONG_SHORT", price: 106, defense: 112, candleOpenTime: 6 * H },
    ];
    const trades = higherTimeframeHoldTrades(frameOf(closes, higher, events), { start: 0, end: 10 * H }, NO_COSTS);
    expect(trades.map((t) => [t.direction, t.entryIndex, t.exitIndex])).toEqual([
      [1, 2, 6],
      [-1, 6, 9],
    ]);
    // A window that starts at hour 3 sees no break before the higher timeframe turns: only the short.
    const later = higherTimeframeHoldTrades(frameOf(closes, higher, events), { start: 3 * H, end: 10 * H }, NO_COSTS);
    expect(later.map((t) => [t.direction, t.entryIndex, t.exitIndex])).toEqual([[-1, 3, 6]]);
  });
});

describe("(a) and (c) restrict MS-1's own trades", () => {
  const closes = [100, 102, 104, 103, 101, 99, 98, 97];
  const events: TrackEvent[] = [
    { signal: "LONG", price: 100, defense: 90, candleOpenTime: 0 },
    { signal: "SHORT", price: 101, defense: 110, candleOpenTime: 4 * H },
  ];
  const allowed = [1, 1, 0, 0, -1, -1, 1, 1];
  const frame = frameOf(closes, allowed, events);
  const window = { start: 0, end: 8 * H };

  it.each(["(a) higher timeframe agrees", "(c) 4-week momentum"])(
    "%s holds only where " + "the direction agrees",
    (name) => {
      const candidate = PRINCIPLED.find((c) => c.name === name)!;
      // MS-1: long 0 → 4 (reversal), short 4 → 7 (window end). Allowed long at 0–1; short at 4–5.
      expect(candidate.trades(frame, window, NO_COSTS).map((t) => [t.direction, t.entryIndex, t.exitIndex])).toEqual([
        [1, 0, 2],
        [-1, 4, 6],
      ]);
    },
  );
});
