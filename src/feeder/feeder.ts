/**
 * The feeder process: leads the coins whose lease it holds and feeds their candles
 * (led-coins.ts: the leases, each led coin's feed, the one pusher), and runs the periodic
 * sources (sources/): derivatives for the coins it leads, and the context sources (news,
 * fundamentals, macro) for the datasets chosen. /metrics, /healthz and /status on a loopback port.
 */

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { FeedConfig } from "../config/feeder.ts";
import { createFuturesExchange } from "./exchange.ts";
import { type CoinHealth, type FeederProblem, type FeedMetrics, startMetricsListener } from "./feed-metrics.ts";
import { type LedCoins, startLedCoins } from "./led-coins.ts";
import { createServerClient, type ServerClient } from "./server-client.ts";
import { type FeederToken, fixedToken, ServiceLink } from "./service-link.ts";
import { createDerivativesSource } from "./sources/derivatives.ts";
import {
  CONTEXT_DATASETS,
  CONTEXT_TICK_MS,
  type ContextDataset,
  type ContextSourcesConfig,
  checkContextSourcesConfig,
  createContextSources,
  parseContextSourcesConfig,
} from "./sources/index.ts";
import { type RunningSources, runSources } from "./sources/run.ts";
import type { PeriodicSource } from "./sources/source.ts";
import { type SourceStatus, SourceStatusBoard } from "./sources/source-status.ts";

export type { SourceStatus } from "./sources/source-status.ts";

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
 * leads or stands by for each coin, and starts the chosen periodic sources. A context dataset
 * without what it needs throws ConfigError before anything starts.
 */
export async function startFeeder(deps: FeederDeps): Promise<Feeder> {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const contextDatasets = CONTEXT_DATASETS.filter((d) => config.datasets.includes(d));
  const contextConfig = deps.contextConfig ?? parseContextSourcesConfig({});
  checkContextSourcesConfig(contextDatasets, contextConfig);
  const id = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const token = typeof deps.token === "string" ? fixedToken(deps.token) : deps.token;
  const link = new ServiceLink(token, { server: config.server, logger, now });
  const server = createServerClient(config.server, link, id);
  const coins = await startLedCoins({ config, server, logger, now });
  const tickMs = deps.contextTickMs ?? CONTEXT_TICK_MS;
  const sources = startPeriodicSources({ config, contextDatasets, contextConfig, coins, server, logger, now, tickMs });
  const problems = (): FeederProblem[] => {
    const state = link.state();
    const leaseProblem = coins.leases.problem();
    return [
      ...(state ? [{ cause: state.problem, since: state.since, message: state.message }] : []),
      ...(leaseProblem ? [leaseProblem] : []),
    ];
  };
  const listener = await startMetricsListener(
    config.metricsPort,
    coins.metrics,
    coins.health,
    sources.statuses,
    problems,
  );
  const { exchange, tf, datasets } = config;
  logger.info(
    { feederId: id, exchange, symbols: coins.listed, tf, datasets, metricsPort: listener.port },
    "feeder started",
  );
  return {
    id,
    metrics: coins.metrics,
    metricsPort: listener.port,
    coins: coins.health,
    problems,
    sources: sources.statuses,
    auditNow: () => coins.feeds.audit(),
    async stop() {
      const led = await coins.stopFeeding();
      await sources.stop();
      await coins.close(led);
      server.close();
      await listener.close();
    },
  };
}

interface PeriodicSourcesDeps {
  readonly config: FeedConfig;
  readonly contextDatasets: readonly ContextDataset[];
  readonly contextConfig: ContextSourcesConfig;
  /** The led coins (the derivatives source reads them) and the feeder's metrics. */
  readonly coins: LedCoins;
  readonly server: ServerClient;
  readonly logger: Logger;
  readonly now: () => number;
  readonly tickMs: number;
}

/**
 * Starts the chosen periodic sources, reporting on one status board: derivatives (when the
 * exchange has perpetual futures in ccxt), then the context sources. The context sources do
 * not follow the leases: every feeder running them fetches the same public data, and the
 * service stores it idempotently.
 */
function startPeriodicSources(deps: PeriodicSourcesDeps): RunningSources {
  const { config, logger } = deps;
  const { metrics } = deps.coins;
  const board = new SourceStatusBoard(metrics.registry, deps.now);
  const sources: PeriodicSource[] = [];
  if (config.datasets.includes("derivatives")) {
    const futures = createFuturesExchange(config.exchange, { restUrl: config.restUrl, wsUrl: config.wsUrl });
    if (futures) {
      sources.push(
        createDerivativesSource({
          exchange: futures,
          venue: config.exchange,
          quote: config.quote,
          everyMs: config.derivativesEveryMs,
          ledCoins: deps.coins.ledCoins,
          push: (rows) => deps.server.pushDerivatives(rows),
          exchangeErrors: metrics.exchangeErrors,
          logger,
          report: board.reporter("derivatives"),
        }),
      );
    } else {
      logger.info(
        { dataset: "derivatives", exchange: config.exchange },
        "this source has nothing to read here; dataset left alone",
      );
    }
  }
  sources.push(
    ...createContextSources(
      {
        datasets: deps.contextDatasets,
        config: deps.contextConfig,
        logger,
        ingest: deps.server.dataIngest,
        clock: deps.now,
      },
      board,
    ),
  );
  return runSources(sources, board, { tickMs: deps.tickMs, logger });
}
