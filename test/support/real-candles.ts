import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import type { Candle } from "../../src/engine/candle.ts";

/** The twelve coins of real Binance 1h candles in the shared data folder (DESIGN.md §7). */
export const REAL_COINS = [
  "ADA",
  "BNB",
  "BTC",
  "DOGE",
  "DOT",
  "ETH",
  "LINK",
  "LTC",
  "MATIC",
  "SOL",
  "TRX",
  "XRP",
] as const;

/** A coin code from REAL_COINS. */
export type RealCoin = (typeof REAL_COINS)[number];

/** Timeframes the helper can build from the 1h files. */
export type RealTimeframe = "1h" | "4h" | "1d";

const HOUR_MS = 3_600_000;

/** Bucket length of each timeframe in milliseconds; 4h and 1d buckets start at UTC boundaries. */
export const TIMEFRAME_MS: Readonly<Record<RealTimeframe, number>> = Object.freeze({
  "1h": HOUR_MS,
  "4h": 4 * HOUR_MS,
  "1d": 24 * HOUR_MS,
});

// REAL_CANDLES_DIR overrides the folder, e.g. pointing at a missing one to check that tests skip.
/** Absolute path (trailing slash) of the read-only shared candle folder, never copied into the project. */
export const REAL_CANDLES_DIR: string = process.env.REAL_CANDLES_DIR
  ? `${process.env.REAL_CANDLES_DIR.replace(/\/+$/, "")}/`
  : fileURLToPath(new URL("../../../shared/data/candles/", import.meta.url));

/** True when the shared candle folder exists, so real-data tests can `runIf` on it. */
export const realCandlesAvailable: boolean = existsSync(`${REAL_CANDLES_DIR}BTCUSDT_1h.csv.gz`);

const cache = new Map<RealCoin, Candle[]>();

/** Parses the CSV text (`open_time,open,high,low,close,volume,close_time,returns`, ISO times with offset). */
export function parseCandleCsv(text: string): Candle[] {
  const lines = text.split("\n");
  const header = lines[0]?.trim();
  if (header === undefined || !header.startsWith("open_time,open,high,low,close,volume")) {
    throw new Error(`unexpected candle CSV header: ${header}`);
  }
  const out: Candle[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === undefined || line.trim() === "") continue;
    const f = line.split(",");
    // "2020-10-23 11:00:00+03:00" is ISO 8601 apart from the space; the offset keeps it unambiguous.
    const openTime = Date.parse((f[0] ?? "").replace(" ", "T"));
    const candle: Candle = {
      openTime,
      open: Number(f[1]),
      high: Number(f[2]),
      low: Number(f[3]),
      close: Number(f[4]),
      volume: Number(f[5]),
    };
    if (!Number.isFinite(openTime) || !Number.isFinite(candle.close))
      throw new Error(`bad candle line ${i + 1}: ${line}`);
    out.push(candle);
  }
  return out;
}

function load1h(coin: RealCoin): Candle[] | null {
  const cached = cache.get(coin);
  if (cached !== undefined) return cached;
  const file = `${REAL_CANDLES_DIR}${coin}USDT_1h.csv.gz`;
  if (!existsSync(file)) return null;
  const candles = parseCandleCsv(gunzipSync(readFileSync(file)).toString("utf8"));
  cache.set(coin, candles);
  return candles;
}

// Partial buckets at either end are kept; that is how DESIGN.md counts its 495,600 readings.
/** Aggregates candles into UTC-aligned buckets of `periodMs` (first open, last close, extremes, summed volume). */
export function aggregateCandles(candles: readonly Candle[], periodMs: number): Candle[] {
  const out: Candle[] = [];
  let current: { openTime: number; open: number; high: number; low: number; close: number; volume: number } | null =
    null;
  for (const c of candles) {
    // Epoch 0 is a UTC midnight, so flooring to the period gives UTC 4h / 1d boundaries.
    const bucket = Math.floor(c.openTime / periodMs) * periodMs;
    if (current === null || current.openTime !== bucket) {
      if (current !== null) out.push(current);
      current = { openTime: bucket, open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume };
    } else {
      if (c.high > current.high) current.high = c.high;
      if (c.low < current.low) current.low = c.low;
      current.close = c.close;
      current.volume += c.volume;
    }
  }
  if (current !== null) out.push(current);
  return out;
}

/** A coin's real candles at 1h, 4h or 1d, or null when the shared data folder is absent. */
export function loadRealCandles(coin: RealCoin, timeframe: RealTimeframe = "1h"): Candle[] | null {
  const hourly = load1h(coin);
  if (hourly === null) return null;
  return timeframe === "1h" ? hourly : aggregateCandles(hourly, TIMEFRAME_MS[timeframe]);
}

/** One week of real BTC 1m candles (2021-02-19..25), or null when the shared data folder is absent. */
export function loadBtcMinuteWeek(): Candle[] | null {
  const file = `${REAL_CANDLES_DIR}BTCUSDT_1m_2021-02-19_week.json.gz`;
  if (!existsSync(file)) return null;
  const rows = JSON.parse(gunzipSync(readFileSync(file)).toString("utf8")) as Array<Record<string, unknown>>;
  return rows.map((r) => ({
    openTime: Number(r.openTimeInMillis),
    open: Number(r.open),
    high: Number(r.high),
    low: Number(r.low),
    close: Number(r.close),
    volume: Number(r.volume),
  }));
}
