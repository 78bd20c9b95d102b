/**
 * The feeder's context sources (news, fundamentals, macro), started for the datasets chosen
 * with `signals feed --datasets`. Each source runs its own loop: wake every `tickMs`, do what
 * its clock says is due, report the outcome (statuses() and the registry's metrics).
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
import type { ContextSource } from "./source.ts";
import { SourceStatusBoard, type SourceStatus } from "./source-status.ts";

export { parseContextSourcesConfig, type ContextSourcesConfig } from "../../config/sources.ts";
export type { DataIngestClient } from "./ingest-client.ts";
export type { SourceStatus } from "./source-status.ts";

export const CONTEXT_DATASETS = ["news", "fundamentals", "macro"] as const;
export type ContextDataset = (typeof CONTEXT_DATASETS)[number];

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

export interface ContextSources {
  /** Stops every loop, aborts requests in flight and waits for the loops to end. */
  stop(): Promise<void>;
  statuses(): SourceStatus[];
}

/** Checks that each chosen dataset has what it needs; throws ConfigError otherwise. */
export function checkContextSourcesConfig(datasets: readonly ContextDataset[], config: ContextSourcesConfig): void {
  if (datasets.includes("news") && config.news.feeds.length === 0) throw new ConfigError("the news dataset needs NEWS_FEEDS (RSS, Atom or JSON Feed URLs)");
  if (datasets.includes("macro") && !config.macro.apiKey) throw new ConfigError("the macro dataset needs FRED_API_KEY (free at https://fred.stlouisfed.org/docs/api/api_key.html)");
}

/** Starts the chosen sources; each polls at once, then every tickMs. */
export function startContextSources(opts: ContextSourcesOptions): ContextSources {
  const datasets = CONTEXT_DATASETS.filter((d) => opts.datasets.includes(d));
  checkContextSourcesConfig(datasets, opts.config);
  const board = new SourceStatusBoard(opts.registry, opts.clock, datasets);
  const abort = new AbortController();
  const tickMs = opts.tickMs ?? 15_000;
  const common = { timeoutMs: opts.config.timeoutMs, ingest: opts.ingest, clock: opts.clock };
  const reporter = (name: string) => ({ success: () => board.success(name), failure: (message: string) => board.failure(name, message) });
  const sources: ContextSource[] = datasets.map((dataset) => {
    const logger = opts.logger.child({ source: dataset });
    switch (dataset) {
      case "news":
        return createNewsSource({ ...common, config: opts.config.news, logger, report: reporter(dataset) });
      case "fundamentals":
        return createFundamentalsSource({ ...common, config: opts.config.fundamentals, logger, report: reporter(dataset) });
      case "macro":
        return createMacroSource({ ...common, config: opts.config.macro, logger, report: reporter(dataset) });
    }
  });

  const loops = sources.map(async (source) => {
    while (!abort.signal.aborted) {
      try {
        await source.poll(abort.signal);
      } catch (err) {
        // poll reports its own failures; anything else is a bug worth a line, not a dead loop.
        opts.logger.error({ source: source.name, err: (err as Error).message }, "context source poll threw");
      }
      if (abort.signal.aborted) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, tickMs);
        abort.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  });

  return {
    async stop() {
      abort.abort();
      await Promise.all(loops);
    },
    statuses: () => board.statuses(),
  };
}
