/**
 * Timeframes and their UTC bucket boundaries. Higher timeframes are built from the finest one a
 * feeder sends; 4h and 1d buckets start at 00:00 UTC, as on the exchanges.
 */
/** The five timeframes the service computes, finest first. */
export const TIMEFRAMES = ["15m", "30m", "1h", "4h", "1d"] as const;
export type Timeframe = (typeof TIMEFRAMES)[number];

export const TIMEFRAME_MS: Readonly<Record<Timeframe, number>> = Object.freeze({
  "15m": 15 * 60_000,
  "30m": 30 * 60_000,
  "1h": 3_600_000,
  "4h": 4 * 3_600_000,
  "1d": 24 * 3_600_000,
});

/** True for one of the five supported timeframes. */
export function isTimeframe(value: string): value is Timeframe {
  return (TIMEFRAMES as readonly string[]).includes(value);
}

/** The timeframes built from `base`: every coarser one (each divides evenly into the next). */
export function derivedTimeframes(base: Timeframe): Timeframe[] {
  return TIMEFRAMES.filter((tf) => TIMEFRAME_MS[tf] > TIMEFRAME_MS[base]);
}

/** Start of the `tf` bucket containing `openTime` (epoch ms, UTC). */
export function bucketStart(openTime: number, tf: Timeframe): number {
  const size = TIMEFRAME_MS[tf];
  return Math.floor(openTime / size) * size;
}
