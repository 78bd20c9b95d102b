/**
 * The candle side of the feeder: the exchange's spot markets, the lease rounds (leases.ts) that
 * decide which coins this feeder leads, each led coin's feed (candle-feeds.ts) and the one
 * pusher they share. Stopping gives the leases back once what is closed has been pushed.
 */
import type { Logger } from "pino";
import type { FeedConfig } from "../config/feeder.ts";
import { errorSummary } from "../logger.ts";
import { CandleFeeds, marketOf } from "./candle-feeds.ts";
import { createSpotExchange, loadExchange, type SpotExchange } from "./exchange.ts";
import { type CoinHealth, FeedMetrics } from "./feed-metrics.ts";
import { KlineStream } from "./kline-stream.ts";
import { LeaseKeeper } from "./leases.ts";
import { Pusher } from "./pusher.ts";
import type { ServerClient } from "./server-client.ts";
import { sleep } from "./timing.ts";

export interface LedCoinsDeps {
  readonly config: FeedConfig;
  readonly server: ServerClient;
  readonly logger: Logger;
  readonly now: () => number;
}

export interface LedCoins {
  readonly metrics: FeedMetrics;
  readonly feeds: CandleFeeds;
  readonly leases: LeaseKeeper;
  /** The configured coins the exchange lists (all of them when no dataset needs the exchange). */
  readonly listed: readonly string[];
  /** The coins the periodic sources read: the led ones, or every listed one without `candles`. */
  ledCoins(): string[];
  health(): CoinHealth[];
  /**
   * Stops leading: no new round, what is closed pushed (5 s at most), every feed stopped; resolves with the coins that
   * were led.
   */
  stopFeeding(): Promise<string[]>;
  /** Pushes what is left, gives `led` back to the service and closes the exchange. */
  close(led: string[]): Promise<void>;
}

/** Opens the exchange, finds the coins it lists, and starts the lease rounds when `candles` is chosen. */
export async function startLedCoins(deps: LedCoinsDeps): Promise<LedCoins> {
  const { config, server, logger, now } = deps;
  await loadExchange(config.exchange);
  const exchange = createSpotExchange(config.exchange, { restUrl: config.restUrl, wsUrl: config.wsUrl });
  const klines = new KlineStream(exchange, config.tf, logger);
  const unlisted = new Set<string>();
  const stopping = new AbortController();
  const health = (): CoinHealth[] => feeds.health();
  const metrics = new FeedMetrics(health, config.tfMs, now);
  const pusher = new Pusher(server, metrics, logger, standBy);
  const feeds = new CandleFeeds({
    config,
    exchange,
    klines,
    pusher,
    server,
    metrics,
    logger,
    now,
    unlisted,
    stopping: stopping.signal,
  });
  const listed = await listedCoins(exchange, config, unlisted, logger);
  const leasable = () => listed.filter((s) => !unlisted.has(s));
  const leases = new LeaseKeeper({ failoverMs: config.failoverMs, server, feeds, listed: leasable, logger, now });
  const candles = config.datasets.includes("candles");
  if (candles) leases.start(stopping.signal);
  /** The service says another feeder holds `symbol`: stop feeding it until a lease round wins it back. */
  function standBy(symbol: string) {
    logger.warn({ symbol }, "the service says another feeder holds this coin; standing by");
    leases.lose([symbol], "the service says another feeder holds its lease");
    void feeds.drop(symbol);
  }

  return {
    metrics,
    feeds,
    leases,
    listed,
    // Without the candle feed there is no lease to follow: the sources serve every listed coin.
    ledCoins: () => (candles ? feeds.led() : [...listed]),
    health,
    async stopFeeding() {
      stopping.abort();
      await leases.stopped();
      // What the exchange already closed goes out before the leases are given back.
      await Promise.race([pusher.flushed(), sleep(5_000)]);
      const led = feeds.led();
      await Promise.all(led.map((symbol) => feeds.drop(symbol)));
      return led;
    },
    async close(led) {
      await pusher.flushed().catch(() => {});
      pusher.stop();
      await server.releaseLeases(led).catch(() => {});
      klines.stop();
      await exchange.close().catch(() => {});
    },
  };
}

/**
 * Loads the exchange's markets (retrying until it answers) when a dataset needs the exchange,
 * and adds the coins it does not list as spot markets to `unlisted`; resolves with the others.
 */
async function listedCoins(
  exchange: SpotExchange,
  config: FeedConfig,
  unlisted: Set<string>,
  logger: Logger,
): Promise<string[]> {
  const needsExchange = config.datasets.includes("candles") || config.datasets.includes("derivatives");
  if (!needsExchange) return [...config.symbols];
  for (let attempt = 1; ; attempt++) {
    try {
      await exchange.loadMarkets();
      break;
    } catch (err) {
      logger.warn({ err: errorSummary(err), attempt }, "could not load the exchange's markets; retrying");
      await sleep(Math.min(30_000, 1_000 * attempt));
    }
  }
  for (const symbol of config.symbols) {
    const market = exchange.markets[marketOf(config, symbol)];
    if (!market || market.spot === false || market.active === false) {
      unlisted.add(symbol);
      logger.warn(
        { symbol, exchange: config.exchange, quote: config.quote },
        "the exchange does not list this coin; skipped",
      );
    }
  }
  return config.symbols.filter((s) => !unlisted.has(s));
}
