/** One closed or forming OHLCV candle; `openTime` is epoch milliseconds. */
export type Candle = {
  readonly openTime: number;
  readonly open: number;
  readonly high: number;
  readonly low: number;
  readonly close: number;
  readonly volume: number;
};

/** Throws a RangeError unless the candle is finite, has positive prices and low ≤ open, close ≤ high. */
export function assertValidCandle(candle: Candle): void {
  const { openTime, open, high, low, close, volume } = candle;
  // One combined test keeps the hot path to a single branch; the detailed message is built only on failure.
  if (
    Number.isFinite(openTime) &&
    Number.isFinite(high) &&
    Number.isFinite(volume) &&
    low > 0 &&
    low <= open &&
    low <= close &&
    open <= high &&
    close <= high &&
    volume >= 0
  ) {
    return;
  }
  throw new RangeError(
    `invalid candle at openTime=${openTime}: need finite values, 0 < low <= open, close <= high and volume >= 0 ` +
      `(open=${open} high=${high} low=${low} close=${close} volume=${volume})`,
  );
}
