/**
 * The feeder process: leads the coins whose lease it holds (renewed well before expiry; a
 * standby polls and takes a coin over once its lease expires), feeds each led coin's candles,
 * and runs the periodic sources: derivatives for the coins it leads (SOURCES), and the context
 * sources (news, fundamentals, macro; src/feeder/sources/) for the datasets chosen.
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { errorSummary } from "../logger.ts";
import { CoinFeed } from "./coin-feed.ts";
import { createSpotExchange, loadExchange, type SpotExchange } from "./exchange.ts";
import type { FeedConfig } from "../config/feeder.ts";
import { KlineStream } from "./kline-stream.ts";
import { FeedMetrics, startMetricsListener, type CoinHealth, type FeederProblem } from "./feed-metrics.ts";
import { Pusher } from "./pusher.ts";
import { createServerClient, type ServerClient } from "./server-client.ts";
import { fixedToken, ServiceLink, type FeederToken } from "./service-link.ts";
import { createDerivativesSource } from "./derivatives-source.ts";
import { sleep } from "./timing.ts";
import { CONTEXT_DATASETS, checkContextSourcesConfig, parseContextSourcesConfig, startContextSources, type ContextSources, type ContextSourcesConfig, type SourceStatus } from "./sources/index.ts";

export type { SourceStatus } from "./sources/index.ts";

/** A periodic data source the feeder runs next to the candles (the seam for more datasets). */
export interface FeedSource {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
  status(): SourceStatus;
}

/** What a source may use: the coins this feeder leads right now, the server, metrics, logs. */
export interface SourceContext {
  readonly config: FeedConfig;
  readonly ledCoins: () => string[];
  readonly server: ServerClient;
  readonly metrics: FeedMetrics;
  readonly logger: Logger;
  readonly now: () => number;
}

/**
 * The periodic sources by dataset name (`--datasets`); a factory answers null when it has
 * nothing to read (an exchange without perpetual futures). New sources register here.
 */
export const SOURCES: Partial<Record<string, (ctx: SourceContext) => FeedSource | null>> = {
  derivatives: createDerivativesSource,
};

export interface Feeder {
  readonly id: string;
  readonly metrics: FeedMetrics;
  /** Port of /metrics and /healthz. */
  readonly metricsPort: number;
  coins(): CoinHealth[];
  /** What keeps this feeder from pushing now (what /healthz names); empty when nothing does. */
  problems(): FeederProblem[];
  sources(): SourceStatus[];
  /** Runs the audit of every led coin now; resolves with the revisions found. */
  auditNow(): Promise<number>;
  stop(): Promise<void>;
}

export interface FeederDeps {
  readonly config: FeedConfig;
  /** INTERNAL_TOKEN, or the token file read again whenever the service refuses it. */
  readonly token: string | FeederToken;
  readonly logger: Logger;
  readonly now?: () => number;
  /** The context sources' variables; needed when news, fundamentals or macro are chosen. */
  readonly contextConfig?: ContextSourcesConfig;
  /** How often each context source wakes to see what is due (ms); 15 s unless a test says. */
  readonly contextTickMs?: number;
}

/**
 * Starts a feeder: loads the exchange's markets (when candles or derivatives are chosen), then
 * leads or stands by for each coin, and starts the chosen context sources. A context dataset
 * without what it needs throws ConfigError before anything starts.
 */
export async function startFeeder(deps: FeederDeps): Promise<Feeder> {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const contextDatasets = CONTEXT_DATASETS.filter((d) => config.datasets.includes(d));
  const contextConfig = deps.contextConfig ?? parseContextSourcesConfig({});
  checkContextSourcesConfig(contextDatasets, contextConfig);
  const needsExchange = config.datasets.includes("candles") || config.datasets.includes("derivatives");
  const id = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const link = new ServiceLink(typeof deps.token === "string" ? fixedToken(deps.token) : deps.token, { server: config.server, logger, now });
  const server = createServerClient(config.server, link, id);
  await loadExchange(config.exchange);
  const exchange: SpotExchange = createSpotExchange(config.exchange, { restUrl: config.restUrl, wsUrl: config.wsUrl });
  const klines = new KlineStream(exchange, config.tf, logger);
  const feeds = new Map<string, CoinFeed>();
  const unlisted = new Set<string>();
  const health = (): CoinHealth[] =>
    config.symbols.map((symbol) => feeds.get(symbol)?.health() ?? { symbol, state: unlisted.has(symbol) ? "unlisted" : "standby", lastClosedOpenTime: null, lastMessageAt: null });
  const metrics = new FeedMetrics(health, config.tfMs, now);
  /** Set when coins were given up for a lease this feeder could not keep; cleared by the next good lease round. */
  let leaseLost: FeederProblem | null = null;
  const loseLeases = (symbols: string[], why: string) => {
    leaseLost = { cause: "lease_lost", since: leaseLost?.since ?? now(), message: `stopped feeding ${symbols.join(", ")}: ${why}` };
  };
  const pusher = new Pusher(server, metrics, logger, (symbol) => {
    logger.warn({ symbol }, "the service says another feeder holds this coin; standing by");
    loseLeases([symbol], "the service says another feeder holds its lease");
    void dropCoin(symbol);
  });
  const stopping = new AbortController();
  const candles = config.datasets.includes("candles");

  for (let attempt = 1; needsExchange; attempt++) {
    try {
      await exchange.loadMarkets();
      break;
    } catch (err) {
      logger.warn({ err: errorSummary(err), attempt }, "could not load the exchange's markets; retrying");
      await sleep(Math.min(30_000, 1_000 * attempt));
    }
  }
  const marketOf = (symbol: string) => `${symbol}/${config.quote}`;
  for (const symbol of needsExchange ? config.symbols : []) {
    const market = exchange.markets[marketOf(symbol)];
    if (!market || market.spot === false || market.active === false) {
      unlisted.add(symbol);
      logger.warn({ symbol, exchange: config.exchange, quote: config.quote }, "the exchange does not list this coin; skipped");
    }
  }
  const listed = config.symbols.filter((s) => !unlisted.has(s));

  async function dropCoin(symbol: string): Promise<void> {
    const feed = feeds.get(symbol);
    if (!feed) return;
    feeds.delete(symbol);
    await feed.stop();
  }

  async function takeCoins(symbols: string[]): Promise<void> {
    if (symbols.length === 0) return;
    const points = await server.resumePoints(symbols);
    for (const point of points) {
      if (feeds.has(point.symbol) || stopping.signal.aborted) continue;
      if (point.known && point.baseTf !== config.tf) {
        logger.error({ symbol: point.symbol, stored: point.baseTf, tf: config.tf }, "the service stores this coin on another base timeframe; not feeding it");
        unlisted.add(point.symbol);
        continue;
      }
      const feed = new CoinFeed(point.symbol, marketOf(point.symbol), point, { exchange, klines, pusher, metrics, logger, tf: config.tf, tfMs: config.tfMs, historyCandles: config.historyCandles, silenceMs: config.silenceMs, auditEveryMs: config.auditEveryMs, now });
      feeds.set(point.symbol, feed);
      logger.info({ symbol: point.symbol, resumeAfter: point.lastClosedOpenTime || null }, "leading coin");
      feed.start();
    }
  }

  // Leases last two thirds of FEED_FAILOVER (F) and are renewed every F/9: a dead leader's lease
  // ends within 2/3 F, and a standby polling as often takes the coin within F.
  const ttlMs = Math.max(1_000, Math.round((config.failoverMs * 2) / 3));
  // One round both renews what it leads and claims what has expired: every F/9 (≤ F/6).
  const renewMs = Math.max(200, Math.round(config.failoverMs / 9));
  let heldUntil = 0;
  async function leaseRound(): Promise<void> {
    const sent = now();
    try {
      const leases = await server.acquireLeases(
        listed.filter((s) => !unlisted.has(s)),
        ttlMs,
      );
      heldUntil = sent + ttlMs;
      leaseLost = null;
      const won = leases.filter((l) => l.held && !feeds.has(l.symbol)).map((l) => l.symbol);
      for (const lost of leases.filter((l) => !l.held && feeds.has(l.symbol))) {
        logger.warn({ symbol: lost.symbol, holder: lost.holder }, "lease lost; standing by");
        await dropCoin(lost.symbol);
      }
      await takeCoins(won);
    } catch (err) {
      logger.warn({ err: errorSummary(err) }, "lease renewal failed");
      // Past our own deadline the service would refuse us anyway: stop rather than guess.
      if (now() > heldUntil && feeds.size > 0) {
        loseLeases([...feeds.keys()], "their leases could not be renewed in time");
        for (const symbol of [...feeds.keys()]) await dropCoin(symbol);
      }
    }
  }
  const leaseLoop = candles
    ? (async () => {
        while (!stopping.signal.aborted) {
          await leaseRound();
          await sleep(renewMs, stopping.signal);
        }
      })()
    : Promise.resolve();

  // Without the candle feed there is no lease to follow: the sources serve every listed coin.
  const context: SourceContext = { config, ledCoins: () => (candles ? [...feeds.keys()] : [...listed]), server, metrics, logger, now };
  const sources: FeedSource[] = [];
  for (const dataset of config.datasets) {
    const create = SOURCES[dataset];
    if (!create) continue;
    const source = create(context);
    if (source) sources.push(source);
    else logger.info({ dataset, exchange: config.exchange }, "this source has nothing to read here; dataset left alone");
  }
  for (const source of sources) source.start();
  // The context sources do not follow the leases: every feeder running them fetches the same
  // public data, and the service stores it idempotently.
  const contextSources: ContextSources | null =
    contextDatasets.length === 0
      ? null
      : startContextSources({ datasets: contextDatasets, config: contextConfig, logger, registry: metrics.registry, ingest: server.dataIngest, clock: now, tickMs: deps.contextTickMs });
  const statuses = (): SourceStatus[] => [...sources.map((s) => s.status()), ...(contextSources?.statuses() ?? [])];
  const problems = (): FeederProblem[] => {
    const found: FeederProblem[] = [];
    const state = link.state();
    if (state) found.push({ cause: state.problem, since: state.since, message: state.message });
    if (leaseLost) found.push(leaseLost);
    return found;
  };
  const listener = await startMetricsListener(config.metricsPort, metrics, health, statuses, problems);
  logger.info({ feederId: id, exchange: config.exchange, symbols: listed, tf: config.tf, datasets: config.datasets, metricsPort: listener.port }, "feeder started");

  return {
    id,
    metrics,
    metricsPort: listener.port,
    coins: health,
    problems,
    sources: statuses,
    async auditNow() {
      let found = 0;
      for (const feed of feeds.values()) found += await feed.audit();
      return found;
    },
    async stop() {
      stopping.abort();
      await leaseLoop;
      // What the exchange already closed goes out before the leases are given back.
      await Promise.race([pusher.flushed(), sleep(5_000)]);
      const led = [...feeds.keys()];
      await Promise.all(led.map(dropCoin));
      await Promise.all([...sources.map((s) => s.stop()), contextSources?.stop()]);
      await pusher.flushed().catch(() => {});
      pusher.stop();
      await server.releaseLeases(led).catch(() => {});
      server.close();
      klines.stop();
      await exchange.close().catch(() => {});
      await listener.close();
    },
  };
}
