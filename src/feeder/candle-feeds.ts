/**
 * The candle feeds of the coins this feeder leads: one CoinFeed per coin, started from the
 * service's resume point when the coin's lease is won and stopped when it is lost.
 */
import type { Logger } from "pino";
import type { FeedConfig } from "../config/feeder.ts";
import { CoinFeed } from "./coin-feed.ts";
import type { SpotExchange } from "./exchange.ts";
import type { CoinHealth, FeedMetrics } from "./feed-metrics.ts";
import type { KlineStream } from "./kline-stream.ts";
import type { Pusher } from "./pusher.ts";
import type { ServerClient } from "./server-client.ts";

export interface CandleFeedsDeps {
  readonly config: FeedConfig;
  readonly exchange: SpotExchange;
  readonly klines: KlineStream;
  readonly pusher: Pusher;
  readonly server: ServerClient;
  readonly metrics: FeedMetrics;
  readonly logger: Logger;
  readonly now: () => number;
  /** Coins the exchange does not list (or stored on another base timeframe): never fed. */
  readonly unlisted: Set<string>;
  /** Aborted when the feeder stops: no coin is taken after that. */
  readonly stopping: AbortSignal;
}

/** The exchange's market of a coin, e.g. BTC/USDT. */
export const marketOf = (config: FeedConfig, symbol: string) => `${symbol}/${config.quote}`;

export class CandleFeeds {
  readonly #deps: CandleFeedsDeps;
  readonly #feeds = new Map<string, CoinFeed>();

  constructor(deps: CandleFeedsDeps) {
    this.#deps = deps;
  }

  /** The coins led now. */
  led(): string[] {
    return [...this.#feeds.keys()];
  }

  has(symbol: string): boolean {
    return this.#feeds.has(symbol);
  }

  /** Each configured coin's health: its feed's, or standby / unlisted. */
  health(): CoinHealth[] {
    const { config, unlisted } = this.#deps;
    return config.symbols.map(
      (symbol) =>
        this.#feeds.get(symbol)?.health() ?? {
          symbol,
          state: unlisted.has(symbol) ? "unlisted" : "standby",
          lastClosedOpenTime: null,
          lastMessageAt: null,
        },
    );
  }

  /** Starts feeding `symbols` (leases just won), each from the service's resume point. */
  async take(symbols: string[]): Promise<void> {
    if (symbols.length === 0) return;
    const { config, server, logger, unlisted } = this.#deps;
    const points = await server.resumePoints(symbols);
    for (const point of points) {
      if (this.#feeds.has(point.symbol) || this.#deps.stopping.aborted) continue;
      if (point.known && point.baseTf !== config.tf) {
        logger.error(
          { symbol: point.symbol, stored: point.baseTf, tf: config.tf },
          "the service stores this coin on another base timeframe; not feeding it",
        );
        unlisted.add(point.symbol);
        continue;
      }
      const { exchange, klines, pusher, metrics, now } = this.#deps;
      const feed = new CoinFeed(point.symbol, marketOf(config, point.symbol), point, {
        exchange,
        klines,
        pusher,
        metrics,
        logger,
        tf: config.tf,
        tfMs: config.tfMs,
        historyCandles: config.historyCandles,
        silenceMs: config.silenceMs,
        auditEveryMs: config.auditEveryMs,
        now,
      });
      this.#feeds.set(point.symbol, feed);
      logger.info({ symbol: point.symbol, resumeAfter: point.lastClosedOpenTime || null }, "leading coin");
      feed.start();
    }
  }

  /** Stops feeding `symbol` (its lease is lost or given back). */
  async drop(symbol: string): Promise<void> {
    const feed = this.#feeds.get(symbol);
    if (!feed) return;
    this.#feeds.delete(symbol);
    await feed.stop();
  }

  /** Runs the audit of every led coin now; resolves with the revisions found. */
  async audit(): Promise<number> {
    let found = 0;
    for (const feed of this.#feeds.values()) found += await feed.audit();
    return found;
  }
}
