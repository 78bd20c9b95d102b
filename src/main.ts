/**
 * Entry point of `npm start`: load config, start, drain on SIGTERM/SIGINT.
 */
import { ConfigError, loadConfig } from "./config.ts";
import { createLogger, errorSummary } from "./logger.ts";
import { startServer } from "./server/boot.ts";

/** Runs the server until a termination signal; exits non-zero with a one-line reason on failure. */
export async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`signals: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  let server;
  try {
    server = await startServer(config, logger);
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, "could not start");
    process.stderr.write(`signals: could not start: ${(err as Error).message}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "draining");
    server
      .stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err: errorSummary(err) }, "error while stopping");
        process.exit(1);
      });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

if (import.meta.main) await main();
