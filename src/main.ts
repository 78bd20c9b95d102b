/**
 * Entry point of `npm start`: load config, start, drain on SIGTERM/SIGINT. With WORKERS > 1
 * this process is the primary of a cluster (server/cluster.ts) whose workers run this file again.
 */
import cluster from "node:cluster";
import { flushCompileCache } from "node:module";
import type { Logger } from "pino";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { createLogger, errorSummary, flushLogs } from "./logger.ts";
import { PRIVATE_UMASK } from "./server/private-files.ts";

/** What main() runs until a signal: one server process, or the primary of several. */
interface Running {
  /** Resolves to the exit code. */
  stop(): Promise<number>;
}

async function startProcess(config: Config, logger: Logger): Promise<Running> {
  if (config.workers > 1 && cluster.isPrimary) {
    // The primary loads no server code: it only forks and supervises.
    const { startClusterPrimary } = await import("./server/cluster.ts");
    const primary = await startClusterPrimary(config, logger);
    logger.info(
      {
        host: config.host,
        port: primary.port,
        internalHost: config.internalHost,
        internalPort: primary.internalPort,
        database: "postgres",
        workers: config.workers,
        workerPids: primary.pids(),
      },
      "listening",
    );
    return primary;
  }
  const { startServer } = await import("./server/boot.ts");
  const server = await startServer(config, logger);
  return { stop: () => server.stop().then(() => 0) };
}

/** Runs the server until a termination signal; exits non-zero with a one-line reason on failure. */
export async function main(): Promise<void> {
  // Before anything is written: the embedded database (PGlite asks for 0666 and leaves the rest
  // to the umask), the token file and the lock are the operator's alone (server/private-files.ts).
  process.umask(PRIVATE_UMASK);
  let config: Config;
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
  const exit = (code: number): never => {
    flushLogs(logger);
    process.exit(code);
  };
  let server: Running | null = null;
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    if (server === null) return stopWhileStarting(logger, signal, onSignal);
    logger.info({ signal }, "draining");
    server
      .stop()
      .then(exit)
      .catch((err: unknown) => {
        logger.error({ err: errorSummary(err) }, "error while stopping");
        exit(1);
      });
  };
  // From the start: a stop during start-up (the database may be unreachable for long) still
  // writes the lines logged so far, which the default action of the signal would lose.
  const onSignal = (signal: NodeJS.Signals) => stop(signal);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    server = await startProcess(config, logger);
    // `npm start` sets NODE_COMPILE_CACHE: the stripped TypeScript and V8's code of every module
    // loaded so far are written now rather than at exit, so the next start (or a worker forked
    // again) reads them even if this process is killed. Reading them, Node does not load its
    // TypeScript stripper (~10-18 MiB RSS a process; bench/README.md). A no-op without the cache.
    flushCompileCache();
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, "could not start");
    process.stderr.write(`signals: could not start: ${(err as Error).message}\n`);
    exit(1);
  }
}

/**
 * A signal before the process was up: nothing to drain, so after writing the logs the signal
 * is raised again without our handler, and the process ends as it did without one (killed by
 * that signal, the exit status supervisors already know).
 */
function stopWhileStarting(logger: Logger, signal: NodeJS.Signals, handler: (signal: NodeJS.Signals) => void): void {
  logger.info({ signal }, "stopped while starting");
  flushLogs(logger);
  process.off("SIGTERM", handler);
  process.off("SIGINT", handler);
  process.kill(process.pid, signal);
}

if (import.meta.main) await main();
