import { describe, expect, it } from "vitest";
import {
  backtestWindow,
  markedEquity,
  metricsOf,
  positionValue,
  takenTrade,
  takeTrades,
} from "../../../bench/research/accounting.ts";
import { fixed, formatPf } from "../../../bench/research/markdown.ts";
import { median } from "../../../bench/research/walk-forward.ts";
import type { TrackEvent } from "../../../src/track-record/track-record.ts";

const H = 3_600_000;
const FEE = { fee: 0.001, slippage: 0 };
// Closes at hours 0..7.
const closes = [100, 105, 110, 110, 121, 99, 99, 90];
const candles = closes.map((close, i) => ({ openTime: i * H, close }));
const events: TrackEvent[] = [
  { signal: "LONG", price: 100, defense: 95, candleOpenTime: 0 },
  // Opposite signal: the long exits at 110 and the short enters there (a reversal).
  { signal: "STRONG_SHORT", price: 110, defense: 120, candleOpenTime: 2 * H },
  // Hour 4 closes at 121 ≥ 120: the short exits through its defense. Hour 5 opens a long; hour 7 closes at its defense
  // 90.
  { signal: "LONG", price: 99, defense: 90, candleOpenTime: 5 * H },
];

// By hand: g = (1 − f)·(1 + r − f·exit/entry).
const g1 = 0.999 * (1.1 - 0.0011); // long 100 → 110: 1.0978011
const g2 = 0.999 * (0.9 - 0.0011); // short 110 → 121: 0.8980011
const g3 = 0.999 * (89.91 / 99); // long 99 → 90: 0.90727363…

describe("backtest accounting (hand-computed)", () => {
  it("charges the fee on both sides, longs and shorts alike", () => {
    expect(positionValue(1, 100, 110, FEE)).toBeCloseTo(1.0978011, 12);
    expect(positionValue(-1, 100, 90, FEE)).toBeCloseTo(0.999 * 1.0991, 12);
    // In and out at the same price costs both fees: 0.999 · 0.999.
    expect(positionValue(1, 50, 50, FEE)).toBeCloseTo(0.998001, 12);
    expect(positionValue(-1, 50, 50, FEE)).toBeCloseTo(0.998001, 12);
  });

  it(
    "charges slippage on both fills and the fee on each side's " + "notional; a short's exit fee is on the buy-back",
    () => {
      const costs = { fee: 0.001, slippage: 0.0003 };
      // Long 100 → 110: bought at 100.03, sold at 109.967; (1 − f)²·X/E.
      expect(positionValue(1, 100, 110, costs)).toBeCloseTo(0.999 * 0.999 * (109.967 / 100.03), 12);
      // Short 100 → 90: sold at 99.97, bought back at 90.027; (1 − f)·(2 − (1 + f)·X/E).
      expect(positionValue(-1, 100, 90, costs)).toBeCloseTo(0.999 * (2 - 1.001 * (90.027 / 99.97)), 12);
      // Without slippage the short is (1 − f)·(2 − (1 + f)·0.9) = 1.0980009, not (1 + r)(1 − f)² = 1.0978011.
      expect(positionValue(-1, 100, 90, FEE)).toBeCloseTo(1.0980009, 12);
      expect(positionValue(-1, 100, 90, FEE)).not.toBeCloseTo(1.1 * 0.999 * 0.999, 6);
    },
  );

  it("never values a position below zero and liquidates a short when its value reaches zero", () => {
    // A short entered at 10 is worth (1 − f)(2 − (1 + f)·X/10): zero from X ≈ 19.98 on.
    expect(positionValue(-1, 10, 25, FEE)).toBe(0);
    const closes = [10, 15, 21, 12, 8];
    const liquidated = takenTrade(-1, 0, 4, closes, FEE);
    expect(liquidated).toMatchObject({ exitIndex: 2, exitPrice: 21, growth: 0 });
    // The same trade without the spike runs to its exit.
    expect(takenTrade(-1, 0, 4, [10, 15, 18, 12, 8], FEE)).toMatchObject({
      exitIndex: 4,
      exitPrice: 8,
      growth: positionValue(-1, 10, 8, FEE),
    });
    // After a liquidation the equity stays at zero; the drawdown is total.
    expect(markedEquity([liquidated], closes, FEE)).toEqual([
      positionValue(-1, 10, 10, FEE),
      positionValue(-1, 10, 15, FEE),
      0,
      0,
      0,
    ]);
    expect(metricsOf([liquidated], closes, FEE)).toMatchObject({ compoundedPct: -100, maxDrawdownPct: 100 });
  });

  it("marks the equity at every close, after a reversal at the same close", () => {
    const trades = takeTrades(events, candles, { start: 0, end: 8 * H }, FEE);
    const equity = markedEquity(trades, closes, FEE);
    expect(equity[0]).toBeCloseTo(0.998001, 12); // entry mark: both fees
    expect(equity[1]).toBeCloseTo(positionValue(1, 100, 105, FEE), 12);
    // Hour 2: the long ends (g1) and the short enters at 110: its entry mark.
    expect(equity[2]).toBeCloseTo(g1 * 0.998001, 12);
    expect(equity[4]).toBeCloseTo(g1 * g2, 12);
    expect(equity[7]).toBeCloseTo(g1 * g2 * g3, 12);
  });

  it("takes the chart page's trades one at a time and measures them", () => {
    const trades = takeTrades(events, candles, { start: 0, end: 8 * H }, FEE);
    expect(trades.map((t) => [t.direction, t.entryIndex, t.exitIndex, t.exitPrice])).toEqual([
      [1, 0, 2, 110],
      [-1, 2, 4, 121],
      [1, 5, 7, 90],
    ]);
    const m = backtestWindow(events, candles, { start: 0, end: 8 * H }, FEE);
    expect(m.trades).toBe(3);
    expect(m.winRatePct).toBeCloseTo(100 / 3, 10);
    expect(m.avgTradePct).toBeCloseTo(((g1 - 1 + (g2 - 1) + (g3 - 1)) / 3) * 100, 10); // −3.2308…
    expect(m.avgTradePct).toBeCloseTo(-3.2308054545, 8);
    expect(m.profitFactor).toBeCloseTo((g1 - 1) / (1 - g2 + (1 - g3)), 10); // 0.50225…
    expect(m.compoundedPct).toBeCloseTo((g1 * g2 * g3 - 1) * 100, 10); // −10.5586…
    expect(m.compoundedPct).toBeCloseTo(-10.558551998, 6);
    // Peak after the first trade, trough at the last close: 1 − g2·g3.
    expect(m.maxDrawdownPct).toBeCloseTo((1 - g2 * g3) * 100, 10); // 18.5267…
    // 2 + 2 + 2 of 7 candle intervals.
    expect(m.exposurePct).toBeCloseTo((6 / 7) * 100, 10);
    // Buy 100, sell 90, both fees: 0.999 · (0.9 − 0.0009).
    expect(m.buyHoldPct).toBeCloseTo((0.999 * 0.8991 - 1) * 100, 10);
  });

  it("a window sees only its own events and closes what is open at its last close", () => {
    // Hours 1..5: the first long is before the window; the long of hour 5 enters on the last close and is skipped.
    const m = backtestWindow(events, candles, { start: H, end: 6 * H }, FEE);
    expect(m.trades).toBe(1);
    expect(m.compoundedPct).toBeCloseTo((g2 - 1) * 100, 10);
    expect(m.exposurePct).toBeCloseTo(50, 10);
    // Hours 1..3: the short is still open at 110 and is closed there (both fees, no price change).
    const open = backtestWindow(events, candles, { start: H, end: 4 * H }, FEE);
    expect(open.trades).toBe(1);
    expect(open.compoundedPct).toBeCloseTo((0.998001 - 1) * 100, 10);
    expect(open.profitFactor).toBe(0);
  });

  it("a trade-free window has no win rate, average or profit factor, and no drawdown", () => {
    const m = backtestWindow([], candles, { start: 0, end: 8 * H }, FEE);
    expect(m).toMatchObject({
      trades: 0,
      winRatePct: null,
      avgTradePct: null,
      profitFactor: null,
      maxDrawdownPct: 0,
      compoundedPct: 0,
      exposurePct: 0,
    });
    const onlyWin = backtestWindow(events.slice(0, 1), candles.slice(0, 3), { start: 0, end: 3 * H }, FEE);
    expect(onlyWin.profitFactor).toBe(Infinity);
    expect(formatPf(onlyWin.profitFactor)).toBe("∞");
    expect(formatPf(null)).toBe("–");
  });

  it("formats without negative zero and takes medians of even and odd counts", () => {
    expect(fixed(-0.0001)).toBe("0.00");
    expect(fixed(-1.234, 1)).toBe("-1.2");
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });
});
