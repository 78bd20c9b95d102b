/**
 * Backtest accounting of the signal-quality study (docs/signal-quality.md): the chart pages'
 * trades (src/track-record/track-record.ts, same exit rules), taken one position at a time inside a
 * window, with a fee and a slippage on each side, compounding, mark-to-market drawdown, exposure
 * and buy-and-hold over the same candles. Pure: no I/O, no clock.
 *
 * This is the reference for every page that shows results after costs: the fee is charged on
 * the notional actually traded on each side, which for a short's exit is the buy-back
 * (exit price × units), not the position's value.
 */

import { lowerBound } from "../../src/track-record/live-record.ts";
import type { TrackCandle, TrackEvent } from "../../src/track-record/track-record.ts";
import { computeTrackRecord } from "../../src/track-record/track-record.ts";
import { type Costs, positionValue } from "../../src/track-record/trade-costs.ts";

/** Half-open window [start, end) of candle open times (epoch ms). */
export type Window = { readonly start: number; readonly end: number };

export type { Costs } from "../../src/track-record/trade-costs.ts";

/** One trade taken by the one-position backtest, with its result after costs. */
export type TakenTrade = {
  readonly direction: 1 | -1;
  readonly entryIndex: number;
  readonly exitIndex: number;
  readonly entryPrice: number;
  readonly exitPrice: number;
  /** Equity multiple of the trade after both sides' costs (positionValue). */
  readonly growth: number;
};

/** Figures of one coin, timeframe and engine over a window. */
export type Metrics = {
  readonly trades: number;
  /** Percent of trades with a net result above zero; null with no trade. */
  readonly winRatePct: number | null;
  /** Mean net result per trade, percent; null with no trade. */
  readonly avgTradePct: number | null;
  /** Sum of net gains / sum of net losses (percent results); Infinity with gains and no loss, null with no trade. */
  readonly profitFactor: number | null;
  /** Largest peak-to-trough fall of the mark-to-market equity, percent (≥ 0). */
  readonly maxDrawdownPct: number;
  /** (Π growth − 1)·100. */
  readonly compoundedPct: number;
  /** Percent of the window's candle intervals spent in a position. */
  readonly exposurePct: number;
  /** Buying at the first close and selling at the last, both fees paid, percent. */
  readonly buyHoldPct: number;
};

export { positionValue } from "../../src/track-record/trade-costs.ts";

/** The candles of a window: indices [first, last) of the candles opening inside it. */
export function windowRange(candles: readonly TrackCandle[], window: Window): { first: number; last: number } {
  return { first: lowerBound(candles, window.start), last: lowerBound(candles, window.end) };
}

/**
 * Trades taken inside the window, one position at a time, starting flat at the window's start.
 * Only events and candles inside the window are seen, so a trade still open at its end is closed
 * at the window's last close (the exit rules never look past the window).
 */
export function takeTrades(
  events: readonly TrackEvent[],
  candles: readonly TrackCandle[],
  window: Window,
  costs: Costs,
): TakenTrade[] {
  const { first, last } = windowRange(candles, window);
  const inside = candles.slice(first, last);
  if (inside.length === 0) return [];
  const seen = events.filter((e) => e.candleOpenTime >= window.start && e.candleOpenTime < window.end);
  const { trades } = computeTrackRecord(seen, inside);
  const indexOf = (time: number): number => lowerBound(inside, time);
  // A trade enters and exits at closes of the window (its event's close, or the close through its defense).
  const closes = inside.map((c) => c.close);
  const taken: TakenTrade[] = [];
  let heldUntil = Number.NEGATIVE_INFINITY;
  for (const trade of trades) {
    // A signal on the window's very last close has no candle left to be held over.
    if (trade.exitReason === "open" && trade.exitTime === trade.entryTime) continue;
    // The chart page's rule: a trade entered while a position is held is skipped; a reversal's
    // entry is the previous exit, so it is taken.
    if (trade.entryTime < heldUntil) continue;
    taken.push(takenTrade(trade.direction, indexOf(trade.entryTime), indexOf(trade.exitTime), closes, costs));
    heldUntil = trade.exitTime;
  }
  return taken;
}

/**
 * A trade held from close `entryIndex` to close `exitIndex` of a window's `closes`, filled at
 * those closes. A short whose value reaches zero at a close on the way (the price about doubled)
 * is liquidated there, losing its whole stake and no more, as an exchange closes an unleveraged
 * short; a long cannot reach zero.
 */
export function takenTrade(
  direction: 1 | -1,
  entryIndex: number,
  exitIndex: number,
  closes: readonly number[],
  costs: Costs,
): TakenTrade {
  const entryPrice = closes[entryIndex]!;
  if (direction === -1) {
    for (let k = entryIndex + 1; k < exitIndex; k++) {
      if (positionValue(direction, entryPrice, closes[k]!, costs) === 0)
        return { direction, entryIndex, exitIndex: k, entryPrice, exitPrice: closes[k]!, growth: 0 };
    }
  }
  const exitPrice = closes[exitIndex]!;
  return {
    direction,
    entryIndex,
    exitIndex,
    entryPrice,
    exitPrice,
    growth: positionValue(direction, entryPrice, exitPrice, costs),
  };
}

/**
 * Calls `visit(i, value)` with the mark-to-market equity at every close of the window: cash while
 * flat, liquidation value while in a position. At a reversal's close it is called twice: the
 * closed trade's result, then the new position's entry mark.
 */
export function visitMarks(
  trades: readonly TakenTrade[],
  closes: readonly number[],
  costs: Costs,
  visit: (index: number, value: number) => void,
): void {
  let equity = 1;
  let next = 0;
  for (let i = 0; i < closes.length; i++) {
    const trade = trades[next];
    if (trade !== undefined && i >= trade.entryIndex && i <= trade.exitIndex) {
      visit(
        i,
        equity *
          (i === trade.exitIndex ? trade.growth : positionValue(trade.direction, trade.entryPrice, closes[i]!, costs)),
      );
      if (i === trade.exitIndex) {
        equity *= trade.growth;
        next++;
        // A reversal enters at the same close it exits; its own entry mark is taken on this close too.
        const following = trades[next];
        if (following !== undefined && following.entryIndex === i)
          visit(i, equity * positionValue(following.direction, following.entryPrice, closes[i]!, costs));
      }
    } else {
      visit(i, equity);
    }
  }
}

/** The mark-to-market equity at every close (after any reversal at that close), starting from 1. */
export function markedEquity(trades: readonly TakenTrade[], closes: readonly number[], costs: Costs): number[] {
  const equity = new Array<number>(closes.length).fill(1);
  visitMarks(trades, closes, costs, (i, value) => {
    equity[i] = value;
  });
  return equity;
}

/** Candle intervals spent in a position by one-at-a-time trades. */
export function heldIntervals(trades: readonly TakenTrade[]): number {
  return trades.reduce((sum, t) => sum + t.exitIndex - t.entryIndex, 0);
}

/** Every figure of the study for trades already taken over `closes` (the window's candle closes). */
export function metricsOf(trades: readonly TakenTrade[], closes: readonly number[], costs: Costs): Metrics {
  const results = trades.map((t) => (t.growth - 1) * 100);
  const gains = results.filter((r) => r > 0).reduce((s, r) => s + r, 0);
  const losses = -results.filter((r) => r < 0).reduce((s, r) => s + r, 0);
  const wins = results.filter((r) => r > 0).length;

  let peak = 1;
  let maxDrawdown = 0;
  visitMarks(trades, closes, costs, (_, value) => {
    if (value > peak) peak = value;
    const dd = 1 - value / peak;
    if (dd > maxDrawdown) maxDrawdown = dd;
  });
  const firstClose = closes[0];
  const lastClose = closes[closes.length - 1];
  return {
    trades: trades.length,
    winRatePct: trades.length === 0 ? null : (wins * 100) / trades.length,
    avgTradePct: trades.length === 0 ? null : results.reduce((s, r) => s + r, 0) / trades.length,
    profitFactor: trades.length === 0 ? null : losses === 0 ? (gains > 0 ? Infinity : null) : gains / losses,
    maxDrawdownPct: maxDrawdown * 100,
    compoundedPct: (trades.reduce((g, t) => g * t.growth, 1) - 1) * 100,
    exposurePct: closes.length <= 1 ? 0 : (heldIntervals(trades) * 100) / (closes.length - 1),
    buyHoldPct:
      firstClose === undefined || lastClose === undefined
        ? 0
        : (positionValue(1, firstClose, lastClose, costs) - 1) * 100,
  };
}

/** Takes the trades of one series inside a window and measures them. */
export function backtestWindow(
  events: readonly TrackEvent[],
  candles: readonly TrackCandle[],
  window: Window,
  costs: Costs,
): Metrics {
  const trades = takeTrades(events, candles, window, costs);
  return metricsOf(trades, windowCloses(candles, window), costs);
}

/** The closes of the candles opening inside the window. */
export function windowCloses(candles: readonly TrackCandle[], window: Window): number[] {
  const { first, last } = windowRange(candles, window);
  const closes = new Array<number>(last - first);
  for (let i = first; i < last; i++) closes[i - first] = candles[i]!.close;
  return closes;
}
