/**
 * From one coin's trades to the daily returns of an equal-weight portfolio of coins, the series
 * every confidence statistic of docs/signal-quality.md is computed on. Pure: no I/O, no clock.
 *
 * A coin's sleeve is marked to market at every candle close (liquidation value, after costs);
 * its daily return is the change of that mark from one UTC day's last close to the next. The
 * portfolio holds the coins in equal weight, rebalanced daily: its return is the mean of the
 * coins' returns that day. Daily periods make the timeframes comparable (a year is 365 of them:
 * crypto trades every day) and keep intraday noise out of the skewness and kurtosis. A coin whose
 * sleeve is wiped out (a short liquidated after the price doubled) has a −100% day and is then
 * dropped: the equal weight is over the coins left.
 */
import type { TrackCandle } from "../../src/track-record/track-record.ts";
import type { Costs, TakenTrade, Window } from "./accounting.ts";
import { heldIntervals, markedEquity, windowCloses, windowRange } from "./accounting.ts";

const DAY_MS = 86_400_000;

/** Returns per UTC day: `days[i]` is a day number (epoch ms / 1 day), `returns[i]` that day's return. */
export type DailyReturns = { readonly days: readonly number[]; readonly returns: readonly number[] };

/**
 * Daily returns of a sleeve marked at every close of a window (`equity[i]` at the close of
 * `candles[first + i]`): day d's return is the equity at the last close of day d over the equity
 * at the last close of the day before (1 before the first day: the window starts flat). The
 * series ends with the day the equity reaches 0: nothing is left to earn a return on.
 */
export function dailyReturnsOf(
  candles: readonly TrackCandle[],
  first: number,
  equity: readonly number[],
): DailyReturns {
  const days: number[] = [];
  const returns: number[] = [];
  let previous = 1;
  for (let i = 0; i < equity.length; i++) {
    const day = Math.floor(candles[first + i]!.openTime / DAY_MS);
    const next = candles[first + i + 1];
    if (i < equity.length - 1 && next !== undefined && Math.floor(next.openTime / DAY_MS) === day) continue;
    days.push(day);
    returns.push(equity[i]! / previous - 1);
    previous = equity[i]!;
    if (previous === 0) break;
  }
  return { days, returns };
}

/** The daily returns of one coin's trades (taken inside `window`, indices relative to it) over the window's candles. */
export function sleeveDailyReturns(
  trades: readonly TakenTrade[],
  candles: readonly TrackCandle[],
  window: Window,
  costs: Costs,
): DailyReturns {
  const { first } = windowRange(candles, window);
  return dailyReturnsOf(candles, first, markedEquity(trades, windowCloses(candles, window), costs));
}

/** Equal weight, rebalanced daily: each day the mean return of the coins that have that day. */
export function equalWeight(sleeves: readonly DailyReturns[]): DailyReturns {
  const sums = new Map<number, { sum: number; count: number }>();
  for (const sleeve of sleeves) {
    sleeve.days.forEach((day, i) => {
      const entry = sums.get(day) ?? { sum: 0, count: 0 };
      entry.sum += sleeve.returns[i]!;
      entry.count++;
      sums.set(day, entry);
    });
  }
  const days = [...sums.keys()].sort((a, b) => a - b);
  return { days, returns: days.map((d) => sums.get(d)!.sum / sums.get(d)!.count) };
}

/** The part of a daily series whose days fall in [start, end) (epoch ms). */
export function daysBetween(series: DailyReturns, start: number, end: number): number[] {
  return series.returns.filter((_, i) => series.days[i]! * DAY_MS >= start && series.days[i]! * DAY_MS < end);
}

/** Share of a window's candle intervals that one coin's trades spend in a position (0..1). */
export function exposureOf(trades: readonly TakenTrade[], candles: number): number {
  return candles <= 1 ? 0 : heldIntervals(trades) / (candles - 1);
}
