/**
 * The `derivatives` source: every FEED_DERIVATIVES_EVERY, for each coin this feeder leads, the
 * perpetual's funding rate, open interest in USD and long/short account ratio (where the
 * exchange has one) through ccxt, pushed to DataIngestService with the exchange as venue.
 * An exchange without perpetual futures in ccxt leaves the dataset alone (no source).
 */
import type { Logger } from "pino";
import type { Counter } from "prom-client";
import { errorSummary } from "../../logger.ts";
import { errorKind } from "../coin-feed.ts";
import type { FuturesExchange } from "../exchange.ts";
import type { ServerClient } from "../server-client.ts";
import { sleep } from "../timing.ts";
import type { PeriodicSource, SourceReporter } from "./source.ts";

/** How soon a round that found no coin to read (no lease won yet) looks again. */
const NO_COIN_RETRY_MS = 2_000;

export interface DerivativesDeps {
  /** The exchange's perpetual futures (createFuturesExchange). */
  readonly exchange: FuturesExchange;
  /** The venue the rows are stored under: the exchange's id. */
  readonly venue: string;
  readonly quote: string;
  readonly everyMs: number;
  /** The coins this feeder leads right now. */
  readonly ledCoins: () => string[];
  readonly push: ServerClient["pushDerivatives"];
  readonly exchangeErrors: Counter<"symbol" | "kind">;
  readonly logger: Logger;
  readonly report: SourceReporter;
}

const finite = (x: unknown): number | undefined => (typeof x === "number" && Number.isFinite(x) ? x : undefined);

/** Reads one coin's values; missing ones are left out. */
async function readCoin(
  exchange: FuturesExchange,
  market: string,
): Promise<{ time: number; fundingRate?: number; openInterestUsd?: number; longShortRatio?: number } | null> {
  const funding = (await exchange.fetchFundingRate(market)) as {
    fundingRate?: number;
    timestamp?: number;
    markPrice?: number;
  };
  let openInterestUsd: number | undefined;
  if (exchange.has.fetchOpenInterest) {
    const oi = await exchange.fetchOpenInterest(market);
    openInterestUsd =
      finite(oi.openInterestValue) ??
      (finite(oi.openInterestAmount) !== undefined && finite(funding.markPrice) !== undefined
        ? oi.openInterestAmount! * funding.markPrice!
        : undefined);
  }
  let longShortRatio: number | undefined;
  if (exchange.has.fetchLongShortRatioHistory) {
    const history = await exchange.fetchLongShortRatioHistory(market, "5m", undefined, 1);
    longShortRatio = finite(history.at(-1)?.longShortRatio);
  }
  const fundingRate = finite(funding.fundingRate);
  if (fundingRate === undefined && openInterestUsd === undefined && longShortRatio === undefined) return null;
  return {
    time: finite(funding.timestamp) ?? Date.now(),
    ...(fundingRate !== undefined ? { fundingRate } : {}),
    ...(openInterestUsd !== undefined ? { openInterestUsd } : {}),
    ...(longShortRatio !== undefined ? { longShortRatio } : {}),
  };
}

/** Creates the derivatives source over `deps.exchange`. */
export function createDerivativesSource(deps: DerivativesDeps): PeriodicSource {
  const { exchange, logger } = deps;
  let marketsLoaded = false;
  let waitMs = deps.everyMs;

  /** One round; resolves with the rows pushed, or null when this feeder leads no coin yet. */
  async function runOnce(signal: AbortSignal): Promise<number | null> {
    const coins = deps.ledCoins();
    if (coins.length === 0) return null;
    if (!marketsLoaded) {
      await exchange.loadMarkets();
      marketsLoaded = true;
    }
    const rows = [];
    let failed: string | null = null;
    for (const symbol of coins) {
      const market = `${symbol}/${deps.quote}:${deps.quote}`;
      if (!exchange.markets[market]) continue;
      const wait = exchange.coolDownUntil - Date.now();
      if (wait > 0) await sleep(wait, signal);
      try {
        const values = await readCoin(exchange, market);
        if (values) rows.push({ ...values, symbol, venue: deps.venue, time: BigInt(values.time) });
      } catch (err) {
        failed = `${symbol}: ${errorSummary(err).message ?? errorKind(err)}`;
        deps.exchangeErrors.inc({ symbol, kind: errorKind(err) });
      }
    }
    if (rows.length > 0) await deps.push(rows);
    if (failed) throw new Error(failed);
    return rows.length;
  }

  return {
    name: "derivatives",
    async poll(signal) {
      waitMs = deps.everyMs;
      try {
        const pushed = await runOnce(signal);
        // A round that pushed nothing is no success to report; one that had no coin to read
        // (the first round usually runs before the first lease is won) is tried again soon.
        if (pushed !== null && pushed > 0) deps.report.success();
        if (pushed === null) waitMs = Math.min(deps.everyMs, NO_COIN_RETRY_MS);
      } catch (err) {
        deps.report.failure(String((err as Error).message ?? err).slice(0, 300));
        logger.warn({ source: "derivatives", err: errorSummary(err) }, "derivatives run failed");
      }
    },
    waitMs: () => waitMs,
  };
}
