/**
 * Backtest accounting of the signal-quality study (docs/signal-quality.md): the chart pages'
 * trades (src/web/track-record.ts, same exit rules), taken one position at a time inside a
 * window, with a fee on each side, compounding, mark-to-market drawdown, exposure and
 * buy-and-hold over the same candles. Pure: no I/O, no clock.
 */
import type { Trade, TrackCandle, TrackEvent } from "../../src/web/track-record.ts";
import { computeTrackRecord } from "../../src/web/track-record.ts";

/** Half-open window [start, end) of candle open times (epoch ms). */
export type Window = { readonly start: number; readonly end: number };

/** One trade taken by the one-position backtest, with its result after fees. */
export type TakenTrade = {
  readonly direction: 1 | -1;
  readonly entryIndex: number;
  readonly exitIndex: number;
  readonly entryPrice: number;
  readonly exitPrice: number;
  /** Equity multiple of the trade after both fees: (1 − f)·(1 + r − f·exit/entry). */
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

/** Equity multiple of a position marked or closed at `price`: fee f paid at entry and on the exit notional. */
export function positionValue(direction: 1 | -1, entry: number, price: number, fee: number): number {
  const r = (direction * (price - entry)) / entry;
  return (1 - fee) * (1 + r - (fee * price) / entry);
}

/** Index of the first candle whose openTime is ≥ time (candles sorted). */
function lowerBound(candles: readonly TrackCandle[], time: number): number {
  let lo = 0;
  let hi = candles.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (candles[mid]!.openTime < time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Trades taken inside the window, one position at a time, starting flat at the window's start.
 * Only events and candles inside the window are seen, so a trade still open at its end is closed
 * at the window's last close (the exit rules never look past the window).
 */
export function takeTrades(events: readonly TrackEvent[], candles: readonly TrackCandle[], window: Window, fee: number): TakenTrade[] {
  const first = lowerBound(candles, window.start);
  const last = lowerBound(candles, window.end);
  const inside = candles.slice(first, last);
  if (inside.length === 0) return [];
  const seen = events.filter((e) => e.candleOpenTime >= window.start && e.candleOpenTime < window.end);
  const { trades } = computeTrackRecord(seen, inside);
  const indexOf = (time: number): number => lowerBound(inside, time);
  const taken: TakenTrade[] = [];
  let heldUntil = Number.NEGATIVE_INFINITY;
  for (const trade of trades) {
    // A signal on the window's very last close has no candle left to be held over.
    if (trade.exitReason === "open" && trade.exitTime === trade.entryTime) continue;
    // The chart page's rule: a trade entered while a position is held is skipped; a reversal's
    // entry is the previous exit, so it is taken.
    if (trade.entryTime < heldUntil) continue;
    taken.push(takenTrade(trade, indexOf(trade.entryTime), indexOf(trade.exitTime), fee));
    heldUntil = trade.exitTime;
  }
  return taken;
}

function takenTrade(trade: Trade, entryIndex: number, exitIndex: number, fee: number): TakenTrade {
  return {
    direction: trade.direction,
    entryIndex,
    exitIndex,
    entryPrice: trade.entryPrice,
    exitPrice: trade.exitPrice,
    growth: positionValue(trade.direction, trade.entryPrice, trade.exitPrice, fee),
  };
}

/** Every figure of the study for trades already taken over `closes` (the window's candle closes). */
export function metricsOf(trades: readonly TakenTrade[], closes: readonly number[], fee: number): Metrics {
  const results = trades.map((t) => (t.growth - 1) * 100);
  const gains = results.filter((r) => r > 0).reduce((s, r) => s + r, 0);
  const losses = -results.filter((r) => r < 0).reduce((s, r) => s + r, 0);
  const wins = results.filter((r) => r > 0).length;

  // Mark-to-market equity at every close: cash while flat, liquidation value while in a position.
  let equity = 1;
  let peak = 1;
  let maxDrawdown = 0;
  let held = 0;
  let next = 0;
  const mark = (value: number): void => {
    if (value > peak) peak = value;
    const dd = 1 - value / peak;
    if (dd > maxDrawdown) maxDrawdown = dd;
  };
  for (let i = 0; i < closes.length; i++) {
    const trade = trades[next];
    if (trade !== undefined && i >= trade.entryIndex && i <= trade.exitIndex) {
      mark(equity * positionValue(trade.direction, trade.entryPrice, closes[i]!, fee));
      if (i === trade.exitIndex) {
        equity *= trade.growth;
        held += trade.exitIndex - trade.entryIndex;
        next++;
        // A reversal enters at the same close it exits; its own entry mark is taken on this close too.
        const following = trades[next];
        if (following !== undefined && following.entryIndex === i) mark(equity * positionValue(following.direction, following.entryPrice, closes[i]!, fee));
      }
    } else {
      mark(equity);
    }
  }
  const firstClose = closes[0];
  const lastClose = closes[closes.length - 1];
  return {
    trades: trades.length,
    winRatePct: trades.length === 0 ? null : (wins * 100) / trades.length,
    avgTradePct: trades.length === 0 ? null : results.reduce((s, r) => s + r, 0) / trades.length,
    profitFactor: trades.length === 0 ? null : losses === 0 ? (gains > 0 ? Infinity : null) : gains / losses,
    maxDrawdownPct: maxDrawdown * 100,
    compoundedPct: (trades.reduce((g, t) => g * t.growth, 1) - 1) * 100,
    exposurePct: closes.length <= 1 ? 0 : (held * 100) / (closes.length - 1),
    buyHoldPct: firstClose === undefined || lastClose === undefined ? 0 : (positionValue(1, firstClose, lastClose, fee) - 1) * 100,
  };
}

/** Takes the trades of one series inside a window and measures them. */
export function backtestWindow(events: readonly TrackEvent[], candles: readonly TrackCandle[], window: Window, fee: number): Metrics {
  const trades = takeTrades(events, candles, window, fee);
  const closes = candles.filter((c) => c.openTime >= window.start && c.openTime < window.end).map((c) => c.close);
  return metricsOf(trades, closes, fee);
}
