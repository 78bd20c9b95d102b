/**
 * Data behind the free endpoints for end-to-end tests: hourly candles for a few coins fed
 * through the server's MarketFeed (with the movers' figures computed independently here), and
 * rows of the four pushed datasets stored through the same code path as a feeder's push.
 */
import { pino } from "pino";
import type { Candle } from "../../src/engine/index.ts";
import type { Timeframe } from "../../src/market/timeframes.ts";
import type { DerivativesInput, FundamentalsInput, MacroInput, NewsInput } from "../../src/market-data/datasets.ts";
import { pushDataset } from "../../src/market-data/ingest-service.ts";
import type { TestServer } from "./test-server.ts";

export const H = 3_600_000;

/** `n` hourly candles ending with the one that opens at `lastOpen`, from a close function. */
export function hourly(
  n: number,
  lastOpen: number,
  close: (i: number) => number,
  volume: (i: number) => number,
): Candle[] {
  return Array.from({ length: n }, (_, i) => {
    const open = i === 0 ? close(0) * 0.995 : close(i - 1);
    const c = close(i);
    return {
      openTime: lastOpen - (n - 1 - i) * H,
      open,
      high: Math.max(open, c) * 1.002,
      low: Math.min(open, c) * 0.998,
      close: c,
      volume: volume(i),
    };
  });
}

export interface CoinFixture {
  symbol: string;
  /** Closed candles, oldest first. */
  closed: Candle[];
  /** A forming candle after them, or null. */
  forming: Candle | null;
}

/**
 * Feeds the coins (1h base) into the server's feed at the server's current clock. With
 * `staleBy`, the clock is set that far back for the push, so the coin's last update is that old.
 */
export async function feedCoins(server: TestServer, coins: CoinFixture[], staleBy = 0): Promise<void> {
  const now = server.clock();
  if (staleBy) server.clock.set(now - staleBy);
  try {
    const updates = coins.flatMap((c) => [
      ...c.closed.map((k) => ({ symbol: c.symbol, tf: "1h", ...k, closed: true })),
      ...(c.forming ? [{ symbol: c.symbol, tf: "1h", ...c.forming, closed: false }] : []),
    ]);
    const summary = await server.feed!.ingest(updates, { alerts: false });
    if (summary.rejected > 0) throw new Error(`fixture candles rejected: ${JSON.stringify(summary.rejections)}`);
  } finally {
    server.clock.set(now);
  }
}

/** One movers row as REST sends it. */
export interface MoverJson {
  symbol: string;
  price: number;
  change_pct: number;
  change_24h_pct: number | null;
  volume: number;
  volume_24h: number;
  updated_at: number;
}

/** The movers row the contract prescribes for a 1h-based coin on 1h or 4h, computed naively. */
export function expectedMover(c: CoinFixture, tf: Timeframe, updatedAt: number): MoverJson | null {
  const all = c.forming ? [...c.closed, c.forming] : c.closed;
  const latest = all[all.length - 1]!;
  let last: { open: number; close: number; volume: number } | null;
  if (tf === "1h") {
    last = c.closed[c.closed.length - 1] ?? null;
  } else if (tf === "4h") {
    // The last complete 4h bucket of closed hourly candles.
    const buckets = new Map<number, Candle[]>();
    for (const k of c.closed)
      buckets.set(Math.floor(k.openTime / (4 * H)) * 4 * H, [
        ...(buckets.get(Math.floor(k.openTime / (4 * H)) * 4 * H) ?? []),
        k,
      ]);
    const complete = [...buckets.entries()].filter(([, ks]) => ks.length === 4).sort((a, b) => a[0] - b[0]);
    const ks = complete.at(-1)?.[1];
    last = ks ? { open: ks[0]!.open, close: ks[3]!.close, volume: ks.reduce((s, k) => s + k.volume, 0) } : null;
  } else {
    last = null;
  }
  if (!last) return null;
  const ref = [...c.closed].reverse().find((k) => k.openTime <= latest.openTime - 24 * H);
  return {
    symbol: c.symbol,
    price: latest.close,
    change_pct: (100 * (last.close - last.open)) / last.open,
    change_24h_pct: ref ? (100 * (latest.close - ref.close)) / ref.close : null,
    volume: last.volume,
    volume_24h: all.filter((k) => k.openTime > latest.openTime - 24 * H).reduce((s, k) => s + k.volume, 0),
    updated_at: updatedAt,
  };
}

export interface DatasetFixture {
  derivatives: DerivativesInput[];
  news: NewsInput[];
  macro: MacroInput[];
  fundamentals: FundamentalsInput[];
}

/** Rows of every dataset around `now`, with optional fields both set and unset. */
export function datasetFixture(now: number): DatasetFixture {
  return {
    derivatives: [
      {
        symbol: "BTC",
        venue: "binance-futures",
        time: now - 60_000,
        fundingRate: 0.0001,
        openInterestUsd: 9.5e9,
        longShortRatio: 1.12,
      },
      { symbol: "BTC", venue: "okx", time: now - 120_000, fundingRate: -0.00005 },
      { symbol: "ETH", venue: "binance-futures", time: now - 60_000, openInterestUsd: 4.2e9, longShortRatio: 0.93 },
      { symbol: "SOL", venue: "bybit", time: now - 7 * 24 * H, fundingRate: 0.0003, longShortRatio: 1.5 },
    ],
    news: [
      {
        id: "n-1",
        time: now - 5 * H,
        title: "Bitcoin headline",
        source: "Wire A",
        url: "https://example.com/1",
        coins: ["BTC"],
      },
      {
        id: "n-2",
        time: now - 4 * H,
        title: "Ether and Solana headline",
        source: "Wire B",
        url: "https://example.com/2",
        coins: ["ETH", "SOL"],
      },
      {
        id: "n-3",
        time: now - 3 * H,
        title: "Macro headline",
        source: "Wire A",
        url: "https://example.com/3",
        coins: [],
      },
      {
        id: "n-4",
        time: now - 3 * H,
        title: "Second item at the same time",
        source: "Wire C",
        url: "http://example.com/4",
        coins: ["BTC", "ETH"],
      },
      {
        id: "n-5",
        time: now - 30 * 24 * H,
        title: "Old item",
        source: "Wire A",
        url: "https://example.com/5",
        coins: ["XRP"],
      },
    ],
    macro: [0, 1, 2].flatMap((m) => [
      { series: "US CPI YoY", time: now - (m + 1) * 30 * 24 * H, value: 3 - m * 0.1, unit: "%", source: "BLS" },
      { series: "ISM PMI", time: now - (m + 1) * 30 * 24 * H, value: 49 + m, unit: "index", source: "ISM" },
    ]),
    fundamentals: [
      {
        symbol: "BTC",
        time: now - H,
        circulatingSupply: 19.8e6,
        maxSupply: 21e6,
        marketCapUsd: 1.27e12,
        rank: 1,
        source: "coingecko",
        totalSupply: 19.8e6,
        fullyDilutedValuationUsd: 1.35e12,
        athUsd: 126_080,
        athTime: Date.parse("2025-10-06T18:57:42.558Z"),
      },
      { symbol: "ETH", time: now - H, circulatingSupply: 120.4e6, marketCapUsd: 3.8e11, source: "coingecko" },
      {
        symbol: "SOL",
        time: now - 40 * 24 * H,
        circulatingSupply: 4.6e8,
        marketCapUsd: 6.9e10,
        rank: 5,
        source: "coingecko",
      },
    ],
  };
}

/** Stores the fixture through the push code path; throws if any row is refused. */
export async function storeDatasets(server: TestServer, fixture: DatasetFixture): Promise<void> {
  const deps = { db: server.db.handle, clock: server.clock, logger: pino({ level: "silent" }) };
  for (const dataset of ["derivatives", "news", "macro", "fundamentals"] as const) {
    const summary = await pushDataset(deps, dataset, fixture[dataset] as never);
    if (summary.rejected > 0) throw new Error(`${dataset} fixture rejected: ${JSON.stringify(summary.rejections)}`);
  }
}
