/**
 * `signals feed`: runs the feeder until SIGTERM / SIGINT. A bad flag or variable (or a context
 * dataset without what it needs) prints one line and exits 2; a missing internal token exits 2
 * with where to find it.
 */
import { ConfigError, loadContextSourcesConfig, loadFeedConfig } from "../config.ts";
import { createLogger, errorSummary } from "../logger.ts";
import { clientTokenSource } from "../server/internal-token.ts";
import { startFeeder } from "./feeder.ts";
import { CONTEXT_DATASETS, type ContextSourcesConfig, checkContextSourcesConfig } from "./sources/index.ts";

/** Starts the feeder; resolves to an exit code on a start failure, else -1 (keeps running). */
export async function runFeedCommand(argv: string[]): Promise<number> {
  let config: ReturnType<typeof loadFeedConfig>;
  let contextConfig: ContextSourcesConfig | undefined;
  try {
    config = loadFeedConfig(argv);
    const datasets = config.datasets;
    const contextDatasets = CONTEXT_DATASETS.filter((d) => datasets.includes(d));
    // Their variables are read only when a context dataset is chosen: a candles-only feeder
    // does not care about a stray COINGECKO_PLAN.
    if (contextDatasets.length > 0) {
      contextConfig = loadContextSourcesConfig();
      checkContextSourcesConfig(contextDatasets, contextConfig);
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`signals feed: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  let token: ReturnType<typeof clientTokenSource>;
  try {
    token = clientTokenSource(config);
  } catch (err) {
    process.stderr.write(`signals feed: ${(err as Error).message}\n`);
    return 2;
  }
  if (!token) {
    process.stderr.write(
      `signals feed: no internal token: set INTERNAL_TOKEN, or run where the server's data directory ` +
        `(${config.dataDir}) holds its token file\n`,
    );
    return 2;
  }
  const logger = createLogger(config.logLevel);
  // A library promise nobody awaited (ccxt's socket housekeeping) must not end a process that
  // feeds many coins: log it; the coin's own loop notices the failure and reconnects.
  process.on("unhandledRejection", (reason) =>
    logger.warn({ err: errorSummary(reason) }, "unhandled rejection in the exchange client"),
  );
  const feeder = await startFeeder({ config, contextConfig, token, logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "feeder stopping");
    feeder.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  return -1;
}
