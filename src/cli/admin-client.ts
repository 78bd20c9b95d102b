/**
 * How the CLI reaches AdminService: in-process over the database when it may open it
 * (Postgres, or an embedded data directory no server holds), or through the running
 * server's internal listener when a server holds the embedded data directory.
 *
 * Start-up time matters here: this module imports nothing heavy at the top. The
 * listener path loads only the Connect client and the one generated service it calls; the
 * in-process path (./local-transport.ts) loads the database and the services.
 */
import type { Client, Interceptor, Transport } from "@connectrpc/connect";
import type { AdminService } from "../../gen/signals/v1/admin_pb.js";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { readLock } from "../server/data-dir-lock.ts";
import { readInternalToken } from "../server/internal-token.ts";
import { CliError } from "./cli-error.ts";
import type { LocalServices } from "./local-transport.ts";

export { CliError };
export type AdminClient = Client<typeof AdminService>;

/**
 * Runs `action` with a transport to the internal services (AdminService, IngestService,
 * DataIngestService):
 * the running server's internal listener when it holds the embedded data directory, else
 * the same implementations in-process over the database ("admin": AdminService alone).
 */
export async function withInternalTransport<T>(
  config: Config,
  action: (transport: Transport) => Promise<T>,
  services: LocalServices = "all",
): Promise<T> {
  if (!config.databaseUrl) {
    const holder = readLock(config.dataDir);
    if (holder?.role === "server" && holder.internalPort)
      return action(await remoteTransport(config, holder.internalHost ?? "127.0.0.1", holder.internalPort));
    if (holder)
      throw new CliError(`data directory ${config.dataDir} is busy (process ${holder.pid}); try again in a moment`);
  }
  return (await import("./local-transport.ts")).withLocalTransport(config, services, action);
}

/** Runs `action` with an AdminService client (see withInternalTransport). */
export async function withAdminClient<T>(config: Config, action: (client: AdminClient) => Promise<T>): Promise<T> {
  const [{ createClient }, { AdminService }] = await Promise.all([
    import("@connectrpc/connect"),
    import("../../gen/signals/v1/admin_pb.js"),
  ]);
  return withInternalTransport(config, (transport) => action(createClient(AdminService, transport)), "admin");
}

/** Opens and migrates the database directly, holding the embedded data-directory lock. */
export async function withLocalDb<T>(config: Config, action: (db: DbHandle) => Promise<T>): Promise<T> {
  return (await import("./local-transport.ts")).withLocalDb(config, action);
}

/** A transport to a server's internal listener at host:port, with the internal token. */
export async function remoteTransport(config: Config, host: string, port: number): Promise<Transport> {
  const token = config.internalToken ?? readInternalToken(config.dataDir);
  if (!token)
    throw new CliError(`a server holds ${config.dataDir} but no internal token was found; set INTERNAL_TOKEN`);
  const { createConnectTransport } = await import("@connectrpc/connect-node");
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const hostPart = host.includes(":") ? `[${host}]` : host;
  // HTTP/2: client streaming (candle import) needs it; unary admin calls work over it too.
  return createConnectTransport({ baseUrl: `http://${hostPart}:${port}`, httpVersion: "2", interceptors: [bearer] });
}
