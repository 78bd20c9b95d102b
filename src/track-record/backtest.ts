/**
 * The backtest of a series' trades against buy-and-hold over the same period, after a fee per
 * side (docs/track-record.md). Pure: no I/O, no clock. One position at a time; every trade pays
 * the fee on entry and on exit, as a fraction of the position's value.
 *
 * Equity is a multiple of the starting capital (1 = unchanged), marked at every close from the
 * first position's entry to the last close: a held position is valued after its entry fee (the
 * exit fee is paid when it ends); buy-and-hold buys at that first entry's price, pays the fee
 * then, and pays it again at the last close (so its final value is what selling would give).
 */
import type { Trade } from "./track-record.ts";
import { positionValue } from "./trade-costs.ts";

/** The fee per side used when none is chosen, in percent of the position (0.1% per side). */
export const DEFAULT_FEE_PCT = 0.1;
/** The largest fee per side a member may choose, in percent. */
export const MAX_FEE_PCT = 1;
/**
 * The fees per side a member may choose, in percent (any `fee=` made the
 * server run a full backtest, 250–700 ms of CPU on a long series, per new value). Exchanges'
 * usual rates: none, maker 0.02%, taker 0.05%, spot 0.075% / 0.1%, and higher retail rates.
 * Each series' backtests are cached per fee, so at most this many per series and close.
 */
export const ALLOWED_FEES_PCT: readonly number[] = Object.freeze([0, 0.02, 0.05, 0.075, 0.1, 0.2, 0.25, 0.5, 1]);

/** Closes in time order: open times (epoch ms) and close prices, one index per candle. */
export interface CloseSeries {
  readonly times: ArrayLike<number>;
  readonly closes: ArrayLike<number>;
}

export interface EquityPoint {
  /** Open time (epoch ms) of the candle at whose close the values are marked. */
  readonly time: number;
  readonly strategy: number;
  readonly buyHold: number;
}

export interface BacktestResult {
  readonly feePct: number;
  /** Closed trades taken (one position at a time). */
  readonly trades: number;
  /** Taken trades whose result after fees is above zero. */
  readonly wins: number;
  readonly winRatePct: number | null;
  /** Mean result per taken trade after fees, in percent; null with none. */
  readonly avgResultPct: number | null;
  /** Compounded result of the closed trades after fees, in percent; null with none. */
  readonly totalPct: number | null;
  /** Buy-and-hold from the first taken entry to the last close, after one fee each way; null with no trade. */
  readonly buyHoldPct: number | null;
  /** Largest fall of the strategy's marked equity from an earlier peak, in percent (≥ 0); null with no trade. */
  readonly maxDrawdownPct: number | null;
  readonly buyHoldMaxDrawdownPct: number | null;
  /** First entry and last close of the period (epoch ms, candle open times); null with no trade. */
  readonly from: number | null;
  readonly to: number | null;
  /** The position still held at the last close, if any (not in the total; the curve stays flat over it). */
  readonly openTrade: Trade | null;
  /** Marked equity at every close of the period. */
  readonly curve: readonly EquityPoint[];
}

/**
 * A trade's result after paying `feePct` on the notional traded at entry and at exit, in
 * percent, by the research's accounting (trade-costs.ts): a long's multiple is (1 − f)²·X/E =
 * (1 + r)(1 − f)²; a short's (1 − f)·(2 − (1 + f)·X/E) with X/E = 1 − r, since its exit fee is
 * charged on the buy-back, floored at −100% (the stake is lost, no more).
 */
export function netResultPct(grossPct: number, feePct: number, direction: 1 | -1 = 1): number {
  const exitOverEntry = 1 + (direction * grossPct) / 100;
  return (positionValue(direction, 1, exitOverEntry, { fee: feePct / 100, slippage: 0 }) - 1) * 100;
}

/**
 * One position at a time: a trade is taken when no taken position is still held at its entry
 * (a reversal's entry is the previous exit, so it is taken); trades entered while a position is
 * held (a second signal in the same direction) are skipped. A taken trade with no exit yet ends
 * the list: it is still held at the last close.
 */
export function takenTrades(trades: readonly Trade[]): { closed: Trade[]; open: Trade | null } {
  const closed: Trade[] = [];
  let heldUntil = Number.NEGATIVE_INFINITY;
  for (const trade of [...trades].sort((a, b) => a.entryTime - b.entryTime)) {
    if (trade.entryTime < heldUntil) continue;
    if (trade.exitReason === "open") return { closed, open: trade };
    closed.push(trade);
    heldUntil = trade.exitTime;
  }
  return { closed, open: null };
}

/** Largest peak-to-trough fall of a series of values, in percent (0 when it never falls). */
export function maxDrawdownPct(values: readonly number[]): number {
  let peak = Number.NEGATIVE_INFINITY;
  let worst = 0;
  for (const v of values) {
    if (v > peak) peak = v;
    else if (peak > 0) worst = Math.max(worst, ((peak - v) * 100) / peak);
  }
  return worst;
}

/** Backtest of `trades` (from computeTrackRecord) over `closes` at `feePct` per side. */
export function runBacktest(trades: readonly Trade[], closes: CloseSeries, feePct: number): BacktestResult {
  const { closed, open } = takenTrades(trades);
  const keep = 1 - feePct / 100;
  const empty = {
    feePct,
    trades: 0,
    wins: 0,
    winRatePct: null,
    avgResultPct: null,
    totalPct: null,
    buyHoldPct: null,
    maxDrawdownPct: null,
    buyHoldMaxDrawdownPct: null,
    from: null,
    to: null,
    openTrade: open,
    curve: [],
  };
  if (closed.length === 0) return empty;

  const net = closed.map((t) => netResultPct(t.resultPct, feePct, t.direction));
  const wins = net.filter((r) => r > 0).length;
  const start = closed[0]!;
  const curve: EquityPoint[] = [];
  let banked = 1;
  let next = 0; // index in `closed` of the trade held or next to enter
  for (let i = 0; i < closes.times.length; i++) {
    const time = closes.times[i]!;
    if (time < start.entryTime) continue;
    const close = closes.closes[i]!;
    // Bank every trade that ended at or before this close (a reversal ends one and enters the next here).
    while (next < closed.length && closed[next]!.exitTime <= time) banked *= 1 + net[next++]! / 100;
    const held = closed[next];
    const strategy =
      held !== undefined && held.entryTime <= time
        ? banked * keep * (1 + (held.direction * (close - held.entryPrice)) / held.entryPrice)
        : banked;
    curve.push({ time, strategy, buyHold: (keep * close) / start.entryPrice });
  }
  const last = curve[curve.length - 1];
  if (last !== undefined) curve[curve.length - 1] = { ...last, buyHold: last.buyHold * keep };
  const growth = net.reduce((g, r) => g * (1 + r / 100), 1);
  return {
    feePct,
    trades: closed.length,
    wins,
    winRatePct: (wins * 100) / closed.length,
    avgResultPct: net.reduce((sum, r) => sum + r, 0) / closed.length,
    totalPct: (growth - 1) * 100,
    buyHoldPct: last === undefined ? null : (curve[curve.length - 1]!.buyHold - 1) * 100,
    maxDrawdownPct: maxDrawdownPct(curve.map((p) => p.strategy)),
    buyHoldMaxDrawdownPct: maxDrawdownPct(curve.map((p) => p.buyHold)),
    from: start.entryTime,
    to: last?.time ?? null,
    openTrade: open,
    curve,
  };
}

/**
 * Parses a fee per side in percent from a query value: the default when absent; an allowed fee
 * as it is; another readable fee from 0 to MAX_FEE_PCT becomes the nearest allowed one (ties to
 * the lower) with `exact: false`, so the page can send the browser to that fee's address; an
 * error text when unreadable or out of range.
 */
export function parseFeePct(
  raw: string | undefined,
): { ok: true; feePct: number; exact: boolean } | { ok: false; message: string } {
  if (raw === undefined || raw.trim() === "") return { ok: true, feePct: DEFAULT_FEE_PCT, exact: true };
  const text = raw.trim();
  const value = /^\d{1,2}(\.\d{1,4})?$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(value) || value > MAX_FEE_PCT) {
    return {
      ok: false,
      message:
        `The fee must be a percentage per side from 0 to ${MAX_FEE_PCT}, one ` +
        `of ${ALLOWED_FEES_PCT.join(", ")}; "${text.slice(0, 20)}" is not.`,
    };
  }
  const nearest = nearestAllowedFee(value);
  return { ok: true, feePct: nearest, exact: nearest === value };
}

/** The allowed fee nearest to `feePct` (the lower one on a tie). */
export function nearestAllowedFee(feePct: number): number {
  let best = ALLOWED_FEES_PCT[0]!;
  for (const fee of ALLOWED_FEES_PCT) if (Math.abs(fee - feePct) < Math.abs(best - feePct)) best = fee;
  return best;
}
