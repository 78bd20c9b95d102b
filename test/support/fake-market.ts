/**
 * A whole exchange's worth of coins for the fake exchange, built from the twelve real series in
 * the shared data folder (read there, never copied): coin i follows real series i mod 12 from a
 * stretch of its own, with its prices scaled by a factor of its own, so 400 coins are 400
 * different markets that still move like real ones. The fake re-times them on start.
 */
import type { Candle } from "../../src/engine/candle.ts";
import type { FakeCoin } from "./fake-exchange.ts";
import { loadRealCandles, REAL_COINS } from "./real-candles.ts";

/** Candles between the stretches two coins of the same real series start at. */
const STRETCH = 900;

const significant = (x: number) => Number(x.toPrecision(10));

/** Coin i's price factor: 0.001 to 20, never the same for neighbours. */
export function priceScale(i: number): number {
  return 10 ** ((i % 5) - 3) * (1 + (i % 11) / 10);
}

function scaled(c: Candle, factor: number): Candle {
  return {
    openTime: c.openTime,
    open: significant(c.open * factor),
    high: significant(c.high * factor),
    low: significant(c.low * factor),
    close: significant(c.close * factor),
    volume: c.volume,
  };
}

/**
 * `count` coins of `candlesPerCoin` real 1h candles each, named after their real series and
 * stretch (`ADA0`, `BNB0`, …, `ADA1`, …); throws when the shared data are absent.
 */
export function realMarket(count: number, candlesPerCoin: number, firstIndex = 0): FakeCoin[] {
  return Array.from({ length: count }, (_, n) => {
    const i = firstIndex + n;
    const real = REAL_COINS[i % REAL_COINS.length]!;
    const series = loadRealCandles(real);
    if (!series) throw new Error(`the real candles of ${real} are not in the shared data folder`);
    const group = Math.floor(i / REAL_COINS.length);
    const offset = (group * STRETCH) % Math.max(1, series.length - candlesPerCoin);
    const factor = priceScale(i);
    return {
      base: `${real}${group}`,
      candles: series.slice(offset, offset + candlesPerCoin).map((c) => scaled(c, factor)),
    };
  });
}
