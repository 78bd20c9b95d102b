/**
 * The demo feed for a bare machine: synthetic 15m candles for a handful of coins, a seeded
 * random walk with regimes (trend up, trend down, range, breakout), so a newcomer sees signals
 * form, change and confirm. Prices are SYNTHETIC sample data, not market prices.
 *
 * Every candle is a pure function of (coin, bucket index) from a fixed anchor, so history is
 * the same after a restart (already stored candles come back as duplicates) and live forming
 * updates converge on exactly the candle that closes.
 */
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import type { Candle } from "../engine/index.ts";
import type { MarketFeed } from "./feed.ts";
import { TIMEFRAME_MS } from "./timeframes.ts";
import type { CandleUpdate } from "./validate.ts";

export const DEMO_COINS: Readonly<Record<string, number>> = Object.freeze({ BTC: 60_000, ETH: 3_000, SOL: 150, BNB: 600, XRP: 0.6 });
const TF = "15m" as const;
const STEP_MS = TIMEFRAME_MS[TF];
const ANCHOR = Date.UTC(2026, 0, 1);
const HISTORY_CANDLES = 1_500;
const REGIME_LENGTH = 48;

/** The demo coin's price at `now`: the close of its latest demo candle. */
export function demoPriceAt(symbol: string, now: number): number {
  const bucket = Math.floor((now - ANCHOR) / STEP_MS) + 1;
  return demoCandles(symbol, Math.max(1, bucket)).at(-1)!.close;
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

/** Generates the coin's candles for bucket indexes [0, count) from the anchor. */
export function demoCandles(symbol: string, count: number): Candle[] {
  const out: Candle[] = [];
  const anchorPrice = DEMO_COINS[symbol] ?? 100;
  let price = anchorPrice;
  const rand = prng(hash(symbol));
  let drift = 0;
  let vol = 0.003;
  for (let i = 0; i < count; i++) {
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
    out.push({ openTime: ANCHOR + i * STEP_MS, open, high, low, close, volume: Math.round(1_000 + rand() * 9_000) });
    price = close;
  }
  return out;
}

/** The forming version of `candle` at fraction f (0..1) of its period. */
export function formingAt(candle: Candle, f: number): Candle {
  const close = candle.open + (candle.close - candle.open) * f;
  const high = Math.max(candle.open, close, candle.open + (candle.high - candle.open) * f);
  const low = Math.min(candle.open, close, candle.open - (candle.open - candle.low) * f);
  return { ...candle, close, high, low, volume: Math.round(candle.volume * f) };
}

const update = (symbol: string, c: Candle, closed: boolean): CandleUpdate => ({ symbol, tf: TF, ...c, closed });

/** Starts the demo feed: backfills history, then updates forming candles every few seconds. */
export async function startDemoFeed(feed: MarketFeed, clock: Clock, logger: Logger, intervalMs = 3_000): Promise<() => void> {
  const seriesFor = (symbol: string) => demoCandles(symbol, Math.floor((clock() - ANCHOR) / STEP_MS) + 1);
  const history: CandleUpdate[] = [];
  for (const symbol of Object.keys(DEMO_COINS)) {
    const series = seriesFor(symbol);
    for (const c of series.slice(-HISTORY_CANDLES - 1, -1)) history.push(update(symbol, c, true));
  }
  const summary = await feed.ingest(history, { alerts: false });
  logger.info({ coins: Object.keys(DEMO_COINS), accepted: summary.accepted, duplicates: summary.duplicates }, "demo feed: synthetic history loaded");
  const tick = async () => {
    const now = clock();
    const updates: CandleUpdate[] = [];
    for (const symbol of Object.keys(DEMO_COINS)) {
      const series = seriesFor(symbol);
      const current = series[series.length - 1]!;
      const previous = series[series.length - 2];
      if (previous) updates.push(update(symbol, previous, true));
      updates.push(update(symbol, formingAt(current, Math.min(1, (now - current.openTime) / STEP_MS)), false));
    }
    await feed.ingest(updates);
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
