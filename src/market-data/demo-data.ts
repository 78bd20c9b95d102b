/**
 * Demo data for the free endpoints on a bare machine: sample derivatives, news, macro and
 * fundamentals rows for the demo coins, labelled as samples, not real figures.
 */
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { DEMO_COINS, demoPriceAt, hash, prng } from "../market/demo-feed.ts";
import {
  DATASETS,
  type DerivativesInput,
  type FundamentalsInput,
  type MacroInput,
  type NewsInput,
} from "./datasets.ts";
import { pushDataset } from "./ingest-service.ts";

export const DEMO_SOURCE = "demo (sample data, not real figures)";
export const DEMO_NEWS_SOURCE = "demo (sample data, not real news)";
export const DEMO_VENUES = ["DEMO-A (sample data)", "DEMO-B (sample data)"] as const;
export const DEMO_MACRO_SERIES = [
  { series: "DEMO policy rate (sample)", unit: "%", base: 4.5, step: 0.25 },
  { series: "DEMO CPI YoY (sample)", unit: "%", base: 3, step: 0.3 },
  { series: "DEMO PMI (sample)", unit: "index", base: 50, step: 1.5 },
] as const;
/** Sample supplies (not real figures): circulating, max (null = uncapped). */
const DEMO_SUPPLY: Readonly<Record<string, [number, number | null]>> = {
  BTC: [19_000_000, 21_000_000],
  ETH: [120_000_000, null],
  SOL: [450_000_000, null],
  BNB: [150_000_000, 200_000_000],
  XRP: [55_000_000_000, 100_000_000_000],
};
const DEMO_DATA_STEP_MS = 5 * 60_000;

/** The sample rows of every dataset as of `now` (pure). */
export function demoDataRows(now: number): {
  derivatives: DerivativesInput[];
  news: NewsInput[];
  macro: MacroInput[];
  fundamentals: FundamentalsInput[];
} {
  const at = Math.floor(now / DEMO_DATA_STEP_MS) * DEMO_DATA_STEP_MS;
  const prices = Object.fromEntries(Object.keys(DEMO_COINS).map((s) => [s, demoPriceAt(s, now)]));
  const rand = prng(hash(`demo-data-${at}`));
  const derivatives = Object.keys(DEMO_COINS).flatMap((symbol) =>
    DEMO_VENUES.map((venue) => ({
      symbol,
      venue,
      time: at,
      fundingRate: Math.round((rand() * 4 - 1) * 1e5) / 1e9,
      openInterestUsd: Math.round(prices[symbol]! * (DEMO_SUPPLY[symbol]![0] / 1_000) * (0.5 + rand())),
      longShortRatio: Math.round((0.7 + rand() * 0.6) * 1000) / 1000,
    })),
  );
  const caps = Object.keys(DEMO_COINS)
    .map((symbol) => ({ symbol, cap: prices[symbol]! * DEMO_SUPPLY[symbol]![0] }))
    .sort((a, b) => b.cap - a.cap);
  const fundamentals = caps.map(({ symbol, cap }, i) => ({
    symbol,
    time: at,
    circulatingSupply: DEMO_SUPPLY[symbol]![0],
    maxSupply: DEMO_SUPPLY[symbol]![1] ?? undefined,
    marketCapUsd: Math.round(cap),
    rank: i + 1,
    source: DEMO_SOURCE,
  }));
  const hour = Math.floor(now / 3_600_000) * 3_600_000;
  const headlines: Array<[string, string[]]> = [
    ["BTC sample headline: demo feed shows a breakout on the 15m chart", ["BTC"]],
    ["ETH and SOL sample headline: volumes pick up in the demo market", ["ETH", "SOL"]],
    ["Sample macro headline: demo central bank holds its demo rate", []],
    ["BNB sample headline: this item only shows how news rows look", ["BNB"]],
    ["XRP sample headline: nothing here is real news", ["XRP"]],
  ];
  // Stable ids: the first start stores them; later starts find duplicates.
  const news = headlines.map(([title, coins], i) => ({
    id: `demo-news-${i + 1}`,
    time: hour - i * 3_600_000,
    title: `[Sample] ${title}`,
    source: DEMO_NEWS_SOURCE,
    url: `https://example.com/demo-news/${i + 1}`,
    coins,
  }));
  const month = new Date(now);
  const macro = DEMO_MACRO_SERIES.flatMap(({ series, unit, base, step }) =>
    Array.from({ length: 12 }, (_, k) => {
      const time = Date.UTC(month.getUTCFullYear(), month.getUTCMonth() - k, 1);
      const r = prng(hash(`${series}-${time}`))();
      return {
        series,
        time,
        value: Math.round((base + (r * 2 - 1) * step * 4) * 100) / 100,
        unit,
        source: DEMO_SOURCE,
      };
    }),
  );
  return { derivatives, news, macro, fundamentals };
}

/** Fills the free endpoints' datasets with sample rows now and refreshes the per-coin ones every few minutes. */
export async function startDemoData(
  db: DbHandle,
  clock: Clock,
  logger: Logger,
  intervalMs = DEMO_DATA_STEP_MS,
): Promise<() => void> {
  const deps = { db, clock, logger };
  const push = async () => {
    const rows = demoDataRows(clock());
    const counts: Record<string, number> = {};
    for (const dataset of DATASETS)
      counts[dataset] = (await pushDataset(deps, dataset, rows[dataset] as never, { demo: true })).accepted;
    return counts;
  };
  const accepted = await push();
  logger.info({ accepted }, "demo feed: sample derivatives, news, macro and fundamentals loaded");
  const timer = setInterval(() => {
    push().catch((err: unknown) => logger.warn({ err: (err as Error).message }, "demo data refresh failed"));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
