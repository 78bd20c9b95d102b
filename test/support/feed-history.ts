/** A market feed's history, written before a test's live candles. */
import type { Candle } from "../../src/engine/index.ts";
import type { MarketFeed } from "../../src/market/feed.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";

/** Ingests each coin's first `count` candles into `feed` as one batch, with no alerts. */
export async function ingestHistory(
  feed: MarketFeed,
  series: ReadonlyMap<string, readonly Candle[]>,
  count: number,
  update: (symbol: string, candle: Candle) => CandleUpdate,
): Promise<void> {
  const updates = [...series].flatMap(([symbol, candles]) => candles.slice(0, count).map((c) => update(symbol, c)));
  await feed.ingest(updates, { alerts: false });
}
