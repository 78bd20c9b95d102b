/**
 * Validation of one incoming candle update. Each rejection has a stable reason code that is
 * counted and reported back to the sender; a rejected update changes nothing.
 */
import { isWellFormedSymbol } from "./symbols.ts";
import type { Timeframe } from "./timeframes.ts";
import { isTimeframe, TIMEFRAME_MS } from "./timeframes.ts";

/** One candle update as feeders send it (forming or closed). */
export interface CandleUpdate {
  symbol: string;
  tf: string;
  /** Epoch milliseconds (UTC) of the candle's start. */
  openTime: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
  closed: boolean;
}

export type RejectReason =
  | "invalid_symbol"
  | "unknown_timeframe"
  | "not_base_timeframe"
  | "misaligned_open_time"
  | "future_open_time"
  | "non_finite_value"
  | "non_positive_price"
  | "negative_volume"
  | "high_below_low"
  | "open_outside_range"
  | "close_outside_range"
  | "out_of_order"
  | "lease_not_held"
  /** A demo push for a coin that holds real data (demo data never replaces or joins real data). */
  | "real_data_held";

/** A candle update that passed the field checks, with a normalised symbol and timeframe. */
export interface ValidUpdate extends CandleUpdate {
  tf: Timeframe;
}

/** Checks the fields of one update; returns the first reason it fails, or null. */
export function checkCandleFields(u: CandleUpdate, now: number): RejectReason | null {
  if (!isWellFormedSymbol(u.symbol)) return "invalid_symbol";
  if (!isTimeframe(u.tf)) return "unknown_timeframe";
  const values = [u.openTime, u.open, u.high, u.low, u.close, u.volume];
  if (!values.every(Number.isFinite)) return "non_finite_value";
  if (!Number.isSafeInteger(u.openTime) || u.openTime < 0 || u.openTime % TIMEFRAME_MS[u.tf] !== 0)
    return "misaligned_open_time";
  // A candle may start at most one period ahead of our clock (feeder clocks drift a little).
  if (u.openTime > now + TIMEFRAME_MS[u.tf]) return "future_open_time";
  if (u.open <= 0 || u.high <= 0 || u.low <= 0 || u.close <= 0) return "non_positive_price";
  if (u.volume < 0) return "negative_volume";
  if (u.high < u.low) return "high_below_low";
  if (u.open < u.low || u.open > u.high) return "open_outside_range";
  if (u.close < u.low || u.close > u.high) return "close_outside_range";
  return null;
}
