/**
 * A hand-made hourly series whose next candle is a structure break: a falling zigzag (5 down
 * by 3, 4 up by 2) leaves the trend down and the last swing high unbroken; the `breaker`
 * closes 1 above that high (a LONG change of character).
 */
import { type Candle, runSeries } from "../../src/engine/index.ts";

const H = 3_600_000;

export interface StructureBreak {
  /** Closed candles before the break. */
  history: Candle[];
  /** The candle whose close breaks the swing high. */
  breaker: Candle;
  swingHigh: number;
}

export function structureBreak(start: number, length = 60): StructureBreak {
  const history: Candle[] = [];
  let level = 200;
  for (let i = 0; history.length < length; i++) {
    const open = level;
    if (i > 0) level += i % 9 >= 1 && i % 9 <= 5 ? -3 : 2;
    const close = i === 0 ? open : level;
    history.push({
      openTime: start + i * H,
      open,
      high: Math.max(open, close) + 0.5,
      low: Math.min(open, close) - 0.5,
      close,
      volume: 10 + i,
    });
  }
  const last = history[history.length - 1]!;
  const swingHigh = runSeries(history).swingHigh!;
  const breaker: Candle = {
    openTime: last.openTime + H,
    open: last.close,
    high: swingHigh + 1.5,
    low: last.close - 0.25,
    close: swingHigh + 1,
    volume: 7,
  };
  return { history, breaker, swingHigh };
}
