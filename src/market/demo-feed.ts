/**
 * The demo feed for a bare machine: synthetic 15m candles for a handful of coins, a seeded
 * random walk with regimes (trend up, trend down, range, breakout), so a newcomer sees signals
 * form, change and confirm. Prices are SYNTHETIC sample data, not market prices.
 *
 * Every candle is a pure function of (coin, bucket index) from a fixed anchor, so history is
 * the same after a restart (already stored candles come back as duplicates) and live forming
 * updates converge on exactly the candle that closes. Prices move on each coin's tick grid
 * (DEMO_TICKS), like a real market's. Everything it sends is marked demo (docs/feeder.md).
 */
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import type { Candle } from "../engine/index.ts";
import type { MarketFeed } from "./feed.ts";
import { TIMEFRAME_MS } from "./timeframes.ts";
import type { CandleUpdate } from "./validate.ts";

export const DEMO_COINS: Readonly<Record<string, number>> = Object.freeze({
  BTC: 60_000,
  ETH: 3_000,
  SOL: 150,
  BNB: 600,
  XRP: 0.6,
});
/**
 * Each demo coin's tick size, as a real market quotes it (Binance's USDT pairs): every demo
 * price is a multiple of it, so every level the engine derives from the candles is one too.
 */
export const DEMO_TICKS: Readonly<Record<string, number>> = Object.freeze({
  BTC: 0.01,
  ETH: 0.01,
  SOL: 0.01,
  BNB: 0.01,
  XRP: 0.0001,
});
const DEFAULT_TICK = 0.01;

/** The tick size of a demo coin. */
export function demoTick(symbol: string): number {
  return DEMO_TICKS[symbol] ?? DEFAULT_TICK;
}

/**
 * `value` on the tick grid: the nearest multiple of `tick`, written with the tick's decimals
 * (so 48754.9 and not 48754.900000000004, which is what a bare `round(v / t) * t` gives).
 */
export function onTickGrid(value: number, tick: number): number {
  const decimals = Math.max(0, Math.ceil(-Math.log10(tick) - 1e-9));
  return Number((Math.round(value / tick) * tick).toFixed(decimals));
}
const TF = "15m" as const;
const STEP_MS = TIMEFRAME_MS[TF];
const ANCHOR = Date.UTC(2026, 0, 1);
const HISTORY_CANDLES = 1_500;
const REGIME_LENGTH = 48;

/** The demo coin's price at `now`: the close of its latest demo candle. */
export function demoPriceAt(symbol: string, now: number): number {
  const next = demoWalk(symbol);
  let candle = next();
  for (let bucket = bucketAt(now); candle.openTime < ANCHOR + bucket * STEP_MS; ) candle = next();
  return candle.close;
}

/** Index of the 15m bucket that holds `now`, counted from the anchor (at least 0). */
function bucketAt(now: number): number {
  return Math.max(0, Math.floor((now - ANCHOR) / STEP_MS));
}

/** Small, fast, seedable PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stable 32-bit hash of a text (seeds per coin). */
export function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/**
 * The coin's seeded walk: each call returns its next candle, from bucket 0 at the anchor. It
 * steps the walk's state instead of regenerating the series, so following it costs nothing
 * per tick (the whole series since the anchor is ~30,000 candles a coin after a year; the
 * feed regenerated it every 3 s, which was most of the embedded server's memory).
 */
export function demoWalk(symbol: string): () => Candle {
  const anchorPrice = DEMO_COINS[symbol] ?? 100;
  const tick = demoTick(symbol);
  let price = anchorPrice;
  const rand = prng(hash(symbol));
  let drift = 0;
  let vol = 0.003;
  let i = 0;
  return () => {
    if (i % REGIME_LENGTH === 0) {
      const regime = Math.floor(rand() * 4);
      drift = regime === 0 ? 0.0012 : regime === 1 ? -0.0012 : 0;
      vol = regime === 3 ? 0.008 : regime === 2 ? 0.002 : 0.004;
      if (regime === 3) drift = rand() < 0.5 ? 0.004 : -0.004;
    }
    const open = price;
    // A gentle pull back to the anchor price keeps the walk within a plausible band forever.
    const pull = -0.002 * Math.log(price / anchorPrice);
    const close = open * (1 + drift + pull + vol * (rand() * 2 - 1));
    const high = Math.max(open, close) * (1 + vol * rand() * 0.8);
    const low = Math.min(open, close) * (1 - vol * rand() * 0.8);
    // The walk itself stays unrounded; what it quotes is on the grid. Rounding is monotonic, so
    // low <= open, close <= high still holds, and the next open is this close quoted again.
    const q = (v: number) => onTickGrid(v, tick);
    const candle = {
      openTime: ANCHOR + i * STEP_MS,
      open: q(open),
      high: q(high),
      low: q(low),
      close: q(close),
      volume: Math.round(1_000 + rand() * 9_000),
    };
    price = close;
    i++;
    return candle;
  };
}

/** Generates the coin's candles for bucket indexes [0, count) from the anchor. */
export function demoCandles(symbol: string, count: number): Candle[] {
  return Array.from({ length: count }, demoWalk(symbol));
}

/** The forming version of `candle` at fraction f (0..1) of its period, on the coin's tick grid. */
export function formingAt(candle: Candle, f: number, tick: number): Candle {
  const q = (v: number) => onTickGrid(v, tick);
  const close = q(candle.open + (candle.close - candle.open) * f);
  const high = Math.max(candle.open, close, q(candle.open + (candle.high - candle.open) * f));
  const low = Math.min(candle.open, close, q(candle.open - (candle.open - candle.low) * f));
  return { ...candle, close, high, low, volume: Math.round(candle.volume * f) };
}

const update = (symbol: string, c: Candle, closed: boolean): CandleUpdate => ({ symbol, tf: TF, ...c, closed });

/** One coin's walk followed up to the bucket that holds `now`, remembering its last two candles. */
function followedWalk(symbol: string) {
  const next = demoWalk(symbol);
  let previous: Candle | undefined;
  let current = next();
  return {
    /** Steps to the bucket holding `now`; `onClosed` sees each candle that closes on the way. */
    advanceTo(now: number, onClosed?: (candle: Candle) => void): { previous: Candle | undefined; current: Candle } {
      for (const openTime = ANCHOR + bucketAt(now) * STEP_MS; current.openTime < openTime; ) {
        onClosed?.(current);
        previous = current;
        current = next();
      }
      return { previous, current };
    },
  };
}

/** Starts the demo feed: backfills history, then updates forming candles every few seconds. */
export async function startDemoFeed(
  feed: MarketFeed,
  clock: Clock,
  logger: Logger,
  intervalMs = 3_000,
): Promise<() => void> {
  const walks = new Map(Object.keys(DEMO_COINS).map((symbol) => [symbol, followedWalk(symbol)]));
  const history: CandleUpdate[] = [];
  const start = clock();
  const firstHistoryTime = ANCHOR + (bucketAt(start) - HISTORY_CANDLES) * STEP_MS;
  for (const [symbol, walk] of walks) {
    walk.advanceTo(start, (closed) => {
      if (closed.openTime >= firstHistoryTime) history.push(update(symbol, closed, true));
    });
  }
  // A coin that holds real data refuses these (real_data_held): the demo never mixes into it.
  const summary = await feed.ingest(history, { alerts: false, demo: true });
  history.length = 0;
  const refused = summary.reasons.real_data_held ?? 0;
  logger.info(
    { coins: Object.keys(DEMO_COINS), accepted: summary.accepted, duplicates: summary.duplicates, refused },
    refused > 0
      ? "demo feed: synthetic history loaded; coins that hold real data are left alone"
      : "demo feed: synthetic history loaded",
  );
  const tick = async () => {
    const now = clock();
    const updates: CandleUpdate[] = [];
    for (const [symbol, walk] of walks) {
      const { previous, current } = walk.advanceTo(now);
      if (previous) updates.push(update(symbol, previous, true));
      updates.push(
        update(symbol, formingAt(current, Math.min(1, (now - current.openTime) / STEP_MS), demoTick(symbol)), false),
      );
    }
    await feed.ingest(updates, { demo: true });
  };
  const timer = setInterval(() => {
    tick().catch((err: unknown) => logger.warn({ err: (err as Error).message }, "demo feed tick failed"));
  }, intervalMs);
  await tick();
  return () => clearInterval(timer);
}

// ---------------------------------------------------------------------------------------------
// Sample rows for the free endpoints' datasets (derivatives, news, macro, fundamentals), so a
// newcomer sees every endpoint answer. Every row says plainly that it is sample data: venues,
// sources and series names carry "demo" and "sample", news links go to example.com. They go
// through the same validation and store as a feeder's push; re-sending them is harmless
// (history rows are duplicates, per-coin rows are replaced by later ones).
// ---------------------------------------------------------------------------------------------
