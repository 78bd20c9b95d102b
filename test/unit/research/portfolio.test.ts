import { describe, expect, it } from "vitest";
import { takenTrade } from "../../../bench/research/accounting.ts";
import {
  dailyReturnsOf,
  daysBetween,
  equalWeight,
  exposureOf,
  sleeveDailyReturns,
} from "../../../bench/research/portfolio.ts";

const H = 3_600_000;
const DAY = 24 * H;
const NO_COSTS = { fee: 0, slippage: 0 };

describe("daily returns of a sleeve and the equal-weight portfolio", () => {
  it("takes each UTC day's last mark over the previous day's, starting from 1", () => {
    // Four 12h candles over two days: marks 1.1, 1.2 (end of day 0), 1.0, 0.9 (end of day 1).
    const candles = [0, 12, 24, 36].map((h) => ({ openTime: h * H, close: 1 }));
    const daily = dailyReturnsOf(candles, 0, [1.1, 1.2, 1.0, 0.9]);
    expect(daily.days).toEqual([0, 1]);
    expect(daily.returns[0]).toBeCloseTo(0.2, 15);
    expect(daily.returns[1]).toBeCloseTo(0.9 / 1.2 - 1, 15);
    // From an offset into the candles (a window that starts later).
    expect(dailyReturnsOf(candles, 2, [1.0, 0.9]).days).toEqual([1]);
  });

  it("ends a sleeve's series on the day it is wiped out", () => {
    const candles = [0, 1, 2, 3].map((d) => ({ openTime: d * DAY, close: 1 }));
    const daily = dailyReturnsOf(candles, 0, [1.1, 0, 0, 0]);
    expect(daily.days).toEqual([0, 1]);
    expect(daily.returns[0]).toBeCloseTo(0.1, 15);
    expect(daily.returns[1]).toBe(-1);
  });

  it("marks a coin's trades inside a window and returns its daily changes", () => {
    // Hourly closes 100 → 110 over a day, then flat: a long from hour 0 to hour 24 earns +10% on day 0.
    const candles = Array.from({ length: 48 }, (_, h) => ({
      openTime: h * H,
      close: h <= 23 ? 100 + (10 * h) / 23 : 110,
    }));
    const closes = candles.map((c) => c.close);
    const trade = takenTrade(1, 0, 30, closes, NO_COSTS);
    const daily = sleeveDailyReturns([trade], candles, { start: 0, end: 48 * H }, NO_COSTS);
    expect(daily.days).toEqual([0, 1]);
    expect(daily.returns[0]).toBeCloseTo(0.1, 12);
    expect(daily.returns[1]).toBeCloseTo(0, 12);
  });

  it("averages the coins that have each day (rebalanced daily) and slices by date", () => {
    const a = { days: [0, 1, 2], returns: [0.1, -0.2, 0.3] };
    const b = { days: [0, 1], returns: [0.3, 0.2] };
    const portfolio = equalWeight([a, b]);
    expect(portfolio.days).toEqual([0, 1, 2]);
    expect(portfolio.returns[0]).toBeCloseTo(0.2, 15);
    expect(portfolio.returns[1]).toBeCloseTo(0, 15);
    expect(portfolio.returns[2]).toBeCloseTo(0.3, 15);
    expect(daysBetween(portfolio, DAY, 3 * DAY)).toEqual(portfolio.returns.slice(1));
  });

  it("measures exposure as the share of candle intervals held", () => {
    const closes = [1, 1, 1, 1, 1];
    expect(exposureOf([takenTrade(1, 0, 2, closes, NO_COSTS), takenTrade(-1, 2, 3, closes, NO_COSTS)], 5)).toBe(0.75);
    expect(exposureOf([], 1)).toBe(0);
  });
});
