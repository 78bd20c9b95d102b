/**
 * The `derivatives` source: every FEED_DERIVATIVES_EVERY, for each coin this feeder leads, the
 * perpetual's funding rate, open interest in USD and long/short account ratio (where the
 * exchange has one) through ccxt, pushed to DataIngestService with the exchange as venue.
 * An exchange without perpetual futures in ccxt leaves the dataset alone (no source).
 */
import { errorSummary } from "../logger.ts";
import { createFuturesExchange, type FuturesExchange } from "./exchange.ts";
import { errorKind } from "./coin-feed.ts";
import type { FeedSource, SourceContext } from "./feeder.ts";
import { SourceStatusBoard } from "./sources/source-status.ts";
import { sleep } from "./timing.ts";

/** How soon a round that found no coin to read (no lease won yet) looks again. */
const NO_COIN_RETRY_MS = 2_000;

const finite = (x: unknown): number | undefined => (typeof x === "number" && Number.isFinite(x) ? x : undefined);

/** Reads one coin's values; missing ones are left out. */
async function readCoin(exchange: FuturesExchange, market: string): Promise<{ time: number; fundingRate?: number; openInterestUsd?: number; longShortRatio?: number } | null> {
  const funding = (await exchange.fetchFundingRate(market)) as { fundingRate?: number; timestamp?: number; markPrice?: number };
  let openInterestUsd: number | undefined;
  if (exchange.has.fetchOpenInterest) {
    const oi = await exchange.fetchOpenInterest(market);
    openInterestUsd = finite(oi.openInterestValue) ?? (finite(oi.openInterestAmount) !== undefined && finite(funding.markPrice) !== undefined ? oi.openInterestAmount! * funding.markPrice! : undefined);
  }
  let longShortRatio: number | undefined;
  if (exchange.has.fetchLongShortRatioHistory) {
    const history = await exchange.fetchLongShortRatioHistory(market, "5m", undefined, 1);
    longShortRatio = finite(history.at(-1)?.longShortRatio);
  }
  const fundingRate = finite(funding.fundingRate);
  if (fundingRate === undefined && openInterestUsd === undefined && longShortRatio === undefined) return null;
  return { time: finite(funding.timestamp) ?? Date.now(), ...(fundingRate !== undefined ? { fundingRate } : {}), ...(openInterestUsd !== undefined ? { openInterestUsd } : {}), ...(longShortRatio !== undefined ? { longShortRatio } : {}) };
}

/** Creates the derivatives source, or null when the exchange has no perpetual futures in ccxt. */
export function createDerivativesSource(ctx: SourceContext): FeedSource | null {
  const { config, logger } = ctx;
  const exchange = createFuturesExchange(config.exchange, { restUrl: config.restUrl, wsUrl: config.wsUrl });
  if (!exchange) return null;
  const board = new SourceStatusBoard(ctx.metrics.registry, ctx.now, ["derivatives"]);
  const abort = new AbortController();
  let loop: Promise<void> | null = null;
  let marketsLoaded = false;

  /** One round; resolves with the rows pushed, or null when this feeder leads no coin yet. */
  async function runOnce(): Promise<number | null> {
    const coins = ctx.ledCoins();
    if (coins.length === 0) return null;
    if (!marketsLoaded) {
      await exchange!.loadMarkets();
      marketsLoaded = true;
    }
    const rows = [];
    let failed: string | null = null;
    for (const symbol of coins) {
      const market = `${symbol}/${config.quote}:${config.quote}`;
      if (!exchange!.markets[market]) continue;
      const wait = exchange!.coolDownUntil - Date.now();
      if (wait > 0) await sleep(wait, abort.signal);
      try {
        const values = await readCoin(exchange!, market);
        if (values) rows.push({ ...values, symbol, venue: config.exchange, time: BigInt(values.time) });
      } catch (err) {
        failed = `${symbol}: ${errorSummary(err).message ?? errorKind(err)}`;
        ctx.metrics.exchangeErrors.inc({ symbol, kind: errorKind(err) });
      }
    }
    if (rows.length > 0) await ctx.server.pushDerivatives(rows);
    if (failed) throw new Error(failed);
    return rows.length;
  }

  return {
    name: "derivatives",
    start() {
      loop ??= (async () => {
        while (!abort.signal.aborted) {
          let waitMs = config.derivativesEveryMs;
          try {
            const pushed = await runOnce();
            // A round that pushed nothing is no success to report; one that had no coin to read
            // (the first round usually runs before the first lease is won) is tried again soon.
            if (pushed !== null && pushed > 0) board.success("derivatives");
            if (pushed === null) waitMs = Math.min(waitMs, NO_COIN_RETRY_MS);
          } catch (err) {
            board.failure("derivatives", String((err as Error).message ?? err).slice(0, 300));
            logger.warn({ source: "derivatives", err: errorSummary(err) }, "derivatives run failed");
          }
          await sleep(waitMs, abort.signal);
        }
      })();
    },
    async stop() {
      abort.abort();
      await loop;
    },
    status: () => board.statuses()[0]!,
  };
}
