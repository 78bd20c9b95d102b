/**
 * The feeder's context sources (news, fundamentals, macro), built for the datasets chosen with
 * `signals feed --datasets`. They run in the one loop of periodic sources (run.ts): each wakes
 * every `tickMs`, does what its clock says is due and reports the outcome (statuses() and the
 * registry's metrics).
 */
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { Clock } from "../../clock.ts";
import { ConfigError } from "../../config/parse.ts";
import type { ContextSourcesConfig } from "../../config/sources.ts";
import { createFundamentalsSource } from "./fundamentals.ts";
import type { DataIngestClient } from "./ingest-client.ts";
import { createMacroSource } from "./macro.ts";
import { createNewsSource } from "./news.ts";
import { type RunningSources, runSources } from "./run.ts";
import type { PeriodicSource, SourceDeps } from "./source.ts";
import { SourceStatusBoard } from "./source-status.ts";

export { type ContextSourcesConfig, parseContextSourcesConfig } from "../../config/sources.ts";
export type { DataIngestClient } from "./ingest-client.ts";
export type { SourceStatus } from "./source-status.ts";

export const CONTEXT_DATASETS = ["news", "fundamentals", "macro"] as const;
export type ContextDataset = (typeof CONTEXT_DATASETS)[number];

/** How often a context source wakes to check what is due, unless the caller says (ms). */
export const CONTEXT_TICK_MS = 15_000;

export interface ContextSourcesOptions {
  /** The datasets this feeder fetches (a subset of CONTEXT_DATASETS). */
  readonly datasets: readonly ContextDataset[];
  readonly config: ContextSourcesConfig;
  readonly logger: Logger;
  /** The feeder's registry; the sources' metrics are registered on it. */
  readonly registry: Registry;
  readonly ingest: DataIngestClient;
  readonly clock: Clock;
  /** How often each source wakes to check what is due (ms); the intervals themselves come from config. */
  readonly tickMs?: number;
}

/** The running context sources. */
export type ContextSources = RunningSources;

/** Checks that each chosen dataset has what it needs; throws ConfigError otherwise. */
export function checkContextSourcesConfig(datasets: readonly ContextDataset[], config: ContextSourcesConfig): void {
  if (datasets.includes("news") && config.news.feeds.length === 0)
    throw new ConfigError("the news dataset needs NEWS_FEEDS (RSS, Atom or JSON Feed URLs)");
  if (datasets.includes("macro") && !config.macro.apiKey)
    throw new ConfigError(
      "the macro dataset needs FRED_API_KEY (free at https://fred.stlouisfed.org/docs/api/api_key.html)",
    );
}

/** Builds the chosen context sources, each reporting on `board`; throws ConfigError when one lacks what it needs. */
export function createContextSources(
  opts: Omit<ContextSourcesOptions, "registry" | "tickMs">,
  board: SourceStatusBoard,
): PeriodicSource[] {
  const datasets = CONTEXT_DATASETS.filter((d) => opts.datasets.includes(d));
  checkContextSourcesConfig(datasets, opts.config);
  const { config } = opts;
  const create: Record<ContextDataset, (deps: Omit<SourceDeps<unknown>, "config">) => PeriodicSource> = {
    news: (deps) => createNewsSource({ ...deps, config: config.news }),
    fundamentals: (deps) => createFundamentalsSource({ ...deps, config: config.fundamentals }),
    macro: (deps) => createMacroSource({ ...deps, config: config.macro }),
  };
  return datasets.map((dataset) =>
    create[dataset]({
      timeoutMs: config.timeoutMs,
      ingest: opts.ingest,
      clock: opts.clock,
      logger: opts.logger.child({ source: dataset }),
      report: board.reporter(dataset),
    }),
  );
}

/** Starts the chosen context sources on their own; each polls at once, then every tickMs. */
export function startContextSources(opts: ContextSourcesOptions): ContextSources {
  const board = new SourceStatusBoard(opts.registry, opts.clock);
  return runSources(createContextSources(opts, board), board, {
    tickMs: opts.tickMs ?? CONTEXT_TICK_MS,
    logger: opts.logger,
  });
}
