/**
 * Starting a server process: open and migrate the database (waiting while it is down),
 * make sure of the internal token, create the demo account on a first embedded start, listen,
 * and drain on SIGTERM/SIGINT. Used by `npm start` and `npx signals serve`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { count } from "drizzle-orm";
import type { Logger } from "pino";
import { createAccount } from "../accounts/accounts.ts";
import { DEFAULT_SCRYPT } from "../accounts/sign-in/passwords.ts";
import { type Clock, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import { type DbHandle, migrateDb, openDb } from "../db/client.ts";
import { accounts } from "../db/schema.ts";
import { errorSummary, flushLogs } from "../logger.ts";
import { startDemoFeed } from "../market/demo-feed.ts";
import { startDemoData } from "../market-data/demo-data.ts";
import { backoffMs } from "../retry.ts";
import { reportReady } from "./cluster.ts";
import { createServer } from "./create-server.ts";
import { acquireLock, updateLock } from "./data-dir-lock.ts";
import { serverTokenSource } from "./internal-token.ts";
import { securePrivateDir } from "./private-files.ts";
import { startupGc } from "./startup-gc.ts";

export interface RunningServer {
  readonly port: number;
  /** null in a follower worker (only the lead serves the internal listener). */
  readonly internalPort: number | null;
  stop(): Promise<void>;
}

/** Opens the database, retrying with backoff while it is unreachable (never a crash loop). */
export async function openDbWithRetry(config: Config, logger: Logger, signal?: AbortSignal): Promise<DbHandle> {
  for (let failures = 1; ; failures++) {
    let handle: DbHandle | null = null;
    try {
      handle = await openDb({
        databaseUrl: config.databaseUrl,
        dataDir: config.dataDir,
        poolSize: config.dbPoolSize,
        silenceMs: config.dbSilenceMs,
        idleInTransactionMs: config.dbIdleInTransactionMs,
        logger,
      });
      await migrateDb(handle);
      return handle;
    } catch (err) {
      // A pool per failed attempt would otherwise stay open for the life of the process.
      await handle?.close().catch(() => {});
      if (signal?.aborted) throw err;
      if (!config.databaseUrl) throw err; // an embedded database that fails to open will not heal by waiting
      // Equal jitter: several server processes that lost the database together do not return in step.
      const delayMs = backoffMs(failures, 500, 10_000, "equal");
      logger.warn({ err: errorSummary(err), retryInMs: delayMs }, "database not reachable; retrying");
      await sleep(delayMs);
    }
  }
}

async function createDemoAccountOnce(config: Config, db: DbHandle, clock: Clock, port: number): Promise<void> {
  const [row] = await db.db.select({ n: count() }).from(accounts);
  if ((row?.n ?? 0) > 0) return;
  const now = clock();
  const { summary, apiKey } = await createAccount(
    db,
    { email: "demo@localhost", plan: "node", subscriptionUntil: new Date(now + 365 * 24 * 3600 * 1000) },
    config.limits,
    now,
  );
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  // Shown once, on the terminal, by design (like `signals account create`); never logged.
  process.stderr.write(
    `${[
      "",
      `First start: created demo node-plan account ${summary.accountId} with ${summary.tokensLeft} Tokens.`,
      `Its API key (shown only now; regenerate with: npx signals key regenerate --account ${summary.accountId}):`,
      `  ${apiKey}`,
      "Try it:",
      `  curl -s -H 'x-api-key: ${apiKey}' 'http://${host}:${port}/api/v1/signals?symbols=BTC,ETH&tf=1h'`,
      "",
    ].join("\n")}\n`,
  );
}

/**
 * Starts a full server process from a validated config: every part, or, as a follower worker
 * of a cluster (config.workerRole, server/cluster.ts), only the public listener.
 */
export async function startServer(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningServer> {
  // The data directory holds the embedded database and the token file: owner only, at every
  // start. Files created later are private through the umask main.ts sets; this repairs what
  // is there (an older version's files, a copy), and runs again once the database is open,
  // because PGlite unpacks a new directory with explicit 0666 modes that no umask narrows.
  const makePrivate = (found: "found" | "unpacked") => {
    const repaired = securePrivateDir(config.dataDir);
    if (repaired === 0) return;
    if (found === "found")
      logger.warn(
        { dataDir: config.dataDir, modesChanged: repaired },
        "data directory files were readable or writable by other users; made private",
      );
    else logger.info({ dataDir: config.dataDir, modesChanged: repaired }, "embedded database files made private");
  };
  makePrivate("found");
  let releaseLock = () => {};
  if (!config.databaseUrl) {
    const lock = acquireLock(config.dataDir, { pid: process.pid, role: "server" });
    if (!lock.ok) {
      throw new Error(
        `data directory ${config.dataDir} is in use by process ${lock.holder.pid} ` +
          `(${lock.holder.role}); stop it, use another DATA_DIR, or set DATABASE_URL`,
      );
    }
    releaseLock = lock.release;
  }
  try {
    const db = await openDbWithRetry(config, logger);
    if (!config.databaseUrl) makePrivate("unpacked");
    const token = serverTokenSource(config);
    // The demo feed writes candles and the demo account is created once: the lead's duties.
    const lead = config.workerRole !== "follower";
    const server = createServer(config, {
      db,
      clock,
      logger,
      internalToken: () => token.current(),
      role: lead ? "lead" : "follower",
    });
    const { port, internalPort } = await server.start();
    const stopDemo = config.demoFeed && lead ? await startDemoFeed(server.feed!, clock, logger) : () => {};
    const stopDemoData = config.demoFeed && lead ? await startDemoData(db, clock, logger) : () => {};
    if (!config.databaseUrl) {
      updateLock(config.dataDir, {
        pid: process.pid,
        role: "server",
        internalHost: config.internalHost,
        internalPort: internalPort!,
      });
    }
    // A worker's line is not "listening": the primary says that once every worker listens.
    const where = { host: config.host, port, internalHost: config.internalHost, internalPort, database: db.driver };
    if (config.passwordHashCost.logN < DEFAULT_SCRYPT.logN)
      logger.warn(
        { passwordScryptLogN: config.passwordHashCost.logN, recommended: DEFAULT_SCRYPT.logN },
        "PASSWORD_SCRYPT_LOG_N is below the production cost: new member passwords are cheaper to guess",
      );
    if (config.workerRole === null) logger.info(where, "listening");
    else logger.info({ ...where, role: config.workerRole }, "worker listening");
    if (config.demoAccount && lead) await createDemoAccountOnce(config, db, clock, port);
    // Start-up's heavy work is done: the one memory-reducing GC of this process's life
    // (server/startup-gc.ts). The listeners are open, so a call that arrives now waits out its
    // pause (56-143 ms measured; docs/decisions.md says when that can happen).
    const gc = startupGc();
    if (gc) logger.info({ ...gc, role: config.workerRole, pid: process.pid }, "start-up memory-reducing GC");
    // Out before the ready report (and so before the primary's "listening"), not a 100 ms tick later.
    flushLogs(logger);
    reportReady(port, internalPort);
    return {
      port,
      internalPort,
      async stop() {
        stopDemo();
        stopDemoData();
        await server.stop();
        await db.close();
        releaseLock();
      },
    };
  } catch (err) {
    releaseLock();
    throw err;
  }
}
