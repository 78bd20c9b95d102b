/** The position-like signal the API reports; STRONG_* are with-trend breaks (BOS), the others CHoCH. */
export type Signal = "NONE" | "LONG" | "STRONG_LONG" | "SHORT" | "STRONG_SHORT";

/** Every signal value, in a stable order (useful for exhaustive checks and statistics). */
export const SIGNALS: readonly Signal[] = Object.freeze(["NONE", "LONG", "STRONG_LONG", "SHORT", "STRONG_SHORT"]);

/** Structure trend: 1 after a bullish break, -1 after a bearish one, 0 before the first break. */
export type Trend = -1 | 0 | 1;

/** Direction of a signal: 1 for longs, -1 for shorts, 0 for NONE. */
export function signalDirection(signal: Signal): Trend {
  switch (signal) {
    case "LONG":
    case "STRONG_LONG":
      return 1;
    case "SHORT":
    case "STRONG_SHORT":
      return -1;
    case "NONE":
      return 0;
  }
}
