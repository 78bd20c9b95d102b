/**
 * The CLI's in-process side: opens the database itself (Postgres, or an embedded data directory
 * no server holds) and serves the internal services over a router transport. Loaded only by
 * commands that take this path, so that a call through a running server's internal listener
 * never loads the database drivers, Drizzle or the services.
 */
import { createRouterTransport, type Transport } from "@connectrpc/connect";
import { pino } from "pino";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { DataIngestService } from "../../gen/signals/v1/data_ingest_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { createAdminService } from "../admin/service.ts";
import { queueSignalAlerts } from "../alerts/signal-alerts.ts";
import { systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import { type DbHandle, migrateDb, openDb } from "../db/client.ts";
import { runChecks } from "../doctor/checks.ts";
import { MarketFeed } from "../market/feed.ts";
import { createIngestService } from "../market/ingest-service.ts";
import { createDataIngestService } from "../market-data/ingest-service.ts";
import { acquireLock } from "../server/data-dir-lock.ts";
import { securePrivateDir } from "../server/private-files.ts";
import { CliError } from "./cli-error.ts";

/** Which internal services a command needs: AdminService alone, or the ingest services too. */
export type LocalServices = "admin" | "all";

/**
 * Runs `action` with the internal services in-process over the database. "admin" skips the
 * market feed (it LISTENs and loads every coin's state, which only the imports use).
 */
export async function withLocalTransport<T>(
  config: Config,
  services: LocalServices,
  action: (transport: Transport) => Promise<T>,
): Promise<T> {
  return withLocalDb(config, async (db) => {
    const logger = pino({ level: "silent" });
    const admin = createAdminService({
      db,
      limits: config.limits,
      clock: systemClock,
      logger,
      publicBaseUrl: config.publicBaseUrl,
      passwordHashCost: config.passwordHashCost,
      runChecks: () => runChecks({ db, clock: systemClock, config }),
    });
    if (services === "admin") return action(createRouterTransport(({ service }) => service(AdminService, admin)));
    const feed = new MarketFeed({
      db,
      clock: systemClock,
      logger,
      staleAfterMs: config.staleAfterMs,
      alertMaxDelayMs: config.alerts.maxDelayMs,
      onEventsStored: queueSignalAlerts,
    });
    await feed.load();
    const transport = createRouterTransport(({ service }) => {
      service(AdminService, admin);
      service(IngestService, createIngestService(feed, logger, db));
      service(DataIngestService, createDataIngestService({ db, clock: systemClock, logger }));
    });
    try {
      return await action(transport);
    } finally {
      await feed.close();
    }
  });
}

/** Opens and migrates the database directly, holding the embedded data-directory lock. */
export async function withLocalDb<T>(config: Config, action: (db: DbHandle) => Promise<T>): Promise<T> {
  let release = () => {};
  if (!config.databaseUrl) {
    securePrivateDir(config.dataDir);
    const lock = acquireLock(config.dataDir, { pid: process.pid, role: "cli" });
    if (!lock.ok)
      throw new CliError(
        `data directory ${config.dataDir} is in use by process ${lock.holder.pid}; try again when it stops`,
      );
    release = lock.release;
  }
  try {
    const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    // PGlite unpacks a new directory with explicit 0666 modes (server/private-files.ts).
    if (!config.databaseUrl) securePrivateDir(config.dataDir);
    try {
      await migrateDb(db);
      return await action(db);
    } finally {
      await db.close();
    }
  } finally {
    release();
  }
}
