/**
 * How the CLI reaches AdminService: in-process over the database when it may open it
 * (Postgres, or an embedded data directory no server holds), or through the running
 * server's internal listener when a server holds the embedded data directory.
 */
import { createClient, createRouterTransport, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { MarketFeed } from "../market/feed.ts";
import { createIngestService } from "../market/ingest-service.ts";
import { DataIngestService } from "../../gen/signals/v1/data_ingest_pb.js";
import { createDataIngestService } from "../market-data/ingest-service.ts";
import type { Config } from "../config.ts";
import { systemClock } from "../clock.ts";
import { openDb, migrateDb, type DbHandle } from "../db/client.ts";
import { createAdminService } from "../admin/service.ts";
import { acquireLock, readInternalToken, readLock } from "../server/data-dir-lock.ts";
import { queueSignalAlerts } from "../alerts/signal-alerts.ts";

export type AdminClient = Client<typeof AdminService>;

export class CliError extends Error {
  override name = "CliError";
}

/**
 * Runs `action` with a transport to the internal services (AdminService, IngestService,
 * DataIngestService):
 * the running server's internal listener when it holds the embedded data directory, else
 * the same implementations in-process over the database.
 */
export async function withInternalTransport<T>(config: Config, action: (transport: Transport) => Promise<T>): Promise<T> {
  if (!config.databaseUrl) {
    const holder = readLock(config.dataDir);
    if (holder?.role === "server" && holder.internalPort) return action(remoteTransport(config, holder.internalHost ?? "127.0.0.1", holder.internalPort));
    if (holder) throw new CliError(`data directory ${config.dataDir} is busy (process ${holder.pid}); try again in a moment`);
  }
  return withLocalDb(config, async (db) => {
    const logger = pino({ level: "silent" });
    const admin = createAdminService({ db, limits: config.limits, clock: systemClock, logger, publicBaseUrl: config.publicBaseUrl });
    const feed = new MarketFeed({ db, clock: systemClock, logger, staleAfterMs: config.staleAfterMs, alertMaxDelayMs: config.alerts.maxDelayMs, onEventsStored: queueSignalAlerts });
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

/** Runs `action` with an AdminService client (see withInternalTransport). */
export function withAdminClient<T>(config: Config, action: (client: AdminClient) => Promise<T>): Promise<T> {
  return withInternalTransport(config, (transport) => action(createClient(AdminService, transport)));
}

/** Opens and migrates the database directly, holding the embedded data-directory lock. */
export async function withLocalDb<T>(config: Config, action: (db: DbHandle) => Promise<T>): Promise<T> {
  let release = () => {};
  if (!config.databaseUrl) {
    const lock = acquireLock(config.dataDir, { pid: process.pid, role: "cli" });
    if (!lock.ok) throw new CliError(`data directory ${config.dataDir} is in use by process ${lock.holder.pid}; try again when it stops`);
    release = lock.release;
  }
  try {
    const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
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

function remoteTransport(config: Config, host: string, port: number): Transport {
  const token = config.internalToken ?? readInternalToken(config.dataDir);
  if (!token) throw new CliError(`a server holds ${config.dataDir} but no internal token was found; set INTERNAL_TOKEN`);
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const hostPart = host.includes(":") ? `[${host}]` : host;
  // HTTP/2: client streaming (candle import) needs it; unary admin calls work over it too.
  return createConnectTransport({ baseUrl: `http://${hostPart}:${port}`, httpVersion: "2", interceptors: [bearer] });
}
