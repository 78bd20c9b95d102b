/**
 * The live record of one series on hand-made candles: only live signals open trades, fills at
 * the next candle's open, the research's accounting with fee and slippage (long (1 − f)²·X/E,
 * short (1 − f)·(2 − (1 + f)·X/E), slipped fills), funding on shorts, liquidation, marks and
 * exposure at every close. Every expected number is written out from the formulas here.
 */
import { describe, expect, it } from "vitest";
import type { SignalName } from "../../../src/market/snapshot.ts";
import { computeLiveSeries, type LiveCandle, type LiveEvent } from "../../../src/track-record/live-record.ts";

const H = 3_600_000;
const t = (i: number) => 1_700_000_000_000 - (1_700_000_000_000 % H) + i * H;
const candles = (rows: Array<[number, number]>): LiveCandle[] =>
  rows.map(([open, close], i) => ({ openTime: t(i), open, close }));
const ev = (signal: SignalName, i: number, price: number, defense: number | null, live = true): LiveEvent => ({
  signal,
  candleOpenTime: t(i),
  price,
  defense,
  live,
});

const f = 0.001;
const s = 0.0003;
const COSTS = { feePct: 0.1, slippagePct: 0.03, shortFundingPctPer8h: 0 };
const long = (entry: number, exit: number) => (1 - f) ** 2 * ((exit * (1 - s)) / (entry * (1 + s)));
const short = (entry: number, exit: number) => (1 - f) * (2 - (1 + f) * ((exit * (1 + s)) / (entry * (1 - s))));

//                      0          1         2          3          4          5        6        7
const CANDLES = candles([
  [100, 100],
  [101, 105],
  [106, 110],
  [108, 107],
  [107, 100],
  [99, 95],
  [96, 90],
  [91, 92],
]);

describe("computeLiveSeries", () => {
  it("enters at the next open, leaves at the open after the exit signal, after fee and slippage", () => {
    const events = [ev("LONG", 0, 100, 90), ev("NONE", 2, 110, null), ev("SHORT", 4, 100, 120)];
    const r = computeLiveSeries(events, CANDLES, H, COSTS);
    expect(r.liveSince).toBe(t(0));
    expect(r.trades).toHaveLength(1);
    const [trade] = r.trades;
    expect(trade).toMatchObject({
      direction: 1,
      signalTime: t(0),
      entryTime: t(1),
      entryPrice: 101,
      exitTime: t(3),
      exitPrice: 108,
      exitReason: "invalidation",
    });
    expect(trade!.growth).toBeCloseTo(long(101, 108), 14);
    // The short entered at candle 5's open is still held: marked at the last close, not a trade.
    expect(r.open).toMatchObject({ direction: -1, entryPrice: 99, exitReason: "open" });
    expect(r.open!.growth).toBeCloseTo(short(99, 92), 14);
    const g = long(101, 108);
    const expected = [1, long(101, 105), long(101, 110), g, g, g * short(99, 95), g * short(99, 90), g * short(99, 92)];
    for (const [i, v] of expected.entries()) expect(r.equity[i], `close ${i}`).toBeCloseTo(v, 14);
    expect(Array.from(r.exposure)).toEqual([0, 1, 1, 0, 0, 1, 1, 1]);
    for (const i of expected.keys()) expect(r.longEquity[i]).toBeCloseTo(i === 0 ? 1 : i <= 2 ? expected[i]! : g, 14);
    expect(r.shortEquity[7]).toBeCloseTo(short(99, 92), 14);
  });

  it("opens no trade for a signal that was not issued live, and starts at the first live one", () => {
    const events = [
      ev("LONG", 0, 100, 90, false),
      ev("NONE", 2, 110, null, false),
      ev("LONG", 3, 107, 95, false),
      ev("SHORT", 4, 100, 120),
    ];
    const r = computeLiveSeries(events, CANDLES, H, COSTS);
    expect(r.liveSince).toBe(t(4));
    expect(r.candles[0]!.openTime).toBe(t(4));
    expect(r.trades).toHaveLength(0);
    expect(r.open).toMatchObject({ direction: -1, entryTime: t(5) });
    expect(
      computeLiveSeries(
        events.map((e) => ({ ...e, live: false })),
        CANDLES,
        H,
        COSTS,
      ),
    ).toMatchObject({ liveSince: null, trades: [], open: null });
  });

  it("a later signal that was not live still ends a live trade (the API served it)", () => {
    const events = [ev("LONG", 0, 100, 90), ev("SHORT", 3, 107, 115, false)];
    const r = computeLiveSeries(events, CANDLES, H, COSTS);
    expect(r.trades).toHaveLength(1);
    expect(r.trades[0]).toMatchObject({ exitTime: t(4), exitPrice: 107, exitReason: "opposite" });
    expect(r.open).toBeNull();
  });

  it("leaves through the defense at the open after the close that crossed it", () => {
    const r = computeLiveSeries([ev("SHORT", 0, 100, 106)], CANDLES, H, COSTS);
    // Short at 101 (open 1); close 1 = 105 < 106, close 2 = 110 ≥ 106 → out at open 3 = 108.
    expect(r.trades[0]).toMatchObject({ entryPrice: 101, exitPrice: 108, exitReason: "defense" });
    expect(r.trades[0]!.growth).toBeCloseTo(short(101, 108), 14);
  });

  it("a signal at the last close has no fill yet: no trade, no open position", () => {
    const r = computeLiveSeries([ev("LONG", 7, 92, 80)], CANDLES, H, COSTS);
    expect(r.trades).toEqual([]);
    expect(r.open).toBeNull();
    expect(Array.from(r.equity)).toEqual([1]);
  });

  it("charges a short the stated funding pro rata for the hours held", () => {
    const costs = { ...COSTS, shortFundingPctPer8h: 0.01 };
    const r = computeLiveSeries([ev("SHORT", 0, 100, 106)], CANDLES, H, costs);
    // Held from open 1 to open 3: 2 hours = 1/4 of 8 hours → 0.0025% of the position.
    expect(r.trades[0]!.funding).toBeCloseTo(0.0001 / 4, 15);
    expect(r.trades[0]!.growth).toBeCloseTo(short(101, 108) - 0.0001 / 4, 14);
    // Longs pay none.
    expect(
      computeLiveSeries([ev("LONG", 0, 100, 90), ev("NONE", 2, 110, null)], CANDLES, H, costs).trades[0]!.funding,
    ).toBe(0);
  });

  it("liquidates a short whose value reaches 0 at a close: growth 0, and nothing is traded after", () => {
    const c = candles([
      [100, 100],
      [100, 150],
      [160, 210],
      [200, 190],
      [190, 180],
    ]);
    const r = computeLiveSeries([ev("SHORT", 0, 100, 300), ev("LONG", 3, 190, 150)], c, H, COSTS);
    expect(short(100, 210)).toBeLessThan(0);
    expect(r.trades).toEqual([
      expect.objectContaining({ direction: -1, exitReason: "liquidated", exitTime: t(2), growth: 0 }),
    ]);
    expect(r.open).toBeNull();
    expect(Array.from(r.equity).slice(2)).toEqual([0, 0, 0]);
  });

  it(
    "holds one position at a time: a same-direction signal while " +
      "long is skipped, a reversal exits and enters at one open",
    () => {
      const events = [
        ev("LONG", 0, 100, 90),
        ev("STRONG_LONG", 1, 105, 95),
        ev("SHORT", 3, 107, 130),
        ev("NONE", 5, 95, null),
      ];
      const r = computeLiveSeries(events, CANDLES, H, COSTS);
      expect(r.trades.map((x) => [x.direction, x.entryPrice, x.exitPrice])).toEqual([
        [1, 101, 107],
        [-1, 107, 96],
      ]);
      expect(r.trades[1]!.growth).toBeCloseTo(short(107, 96), 14);
    },
  );
});
