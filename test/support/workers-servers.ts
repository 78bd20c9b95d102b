/**
 * The multi-process shape on PostgreSQL, for the WORKERS tests: a fresh database, one or more
 * `npm start` processes over it (WORKERS=2 unless a server's variables say otherwise), and a
 * small direct connection for the test to look at the rows. Each server resolves once its
 * "listening" line names the ports (processes.ts); the deadline only bounds a start that hangs.
 */
import { type DbHandle, openDb } from "../../src/db/client.ts";
import { childEnv, type ServerProcess, startServerProcess } from "./processes.ts";
import { createPostgresDatabase } from "./test-db.ts";

/** What every such server runs with: ports from the OS, no demo account or feed, JSON logs, a small pool. */
const BASE_VARS = {
  WORKERS: "2",
  PORT: "0",
  INTERNAL_PORT: "0",
  DEMO_ACCOUNT: "false",
  DEMO_FEED: "false",
  LOG_LEVEL: "info",
  DB_POOL_SIZE: "4",
};

export interface WorkersServers {
  readonly databaseUrl: string;
  /** The servers in the order of `servers` (the first is the one started first). */
  readonly servers: ServerProcess[];
  /** A direct connection to the database (two connections). */
  readonly db: DbHandle;
  /** Stops the servers (SIGKILL with `kill: true`), closes the connection, drops the database. */
  close(options?: { kill?: boolean }): Promise<void>;
}

/**
 * Starts one server per entry of `servers` (each entry's variables over `env` over the base
 * ones), one after the other, on a new database. On a failed start, what was started is closed.
 */
export async function startWorkersServers(options: {
  internalToken: string;
  env?: Record<string, string>;
  servers?: Array<Record<string, string>>;
}): Promise<WorkersServers> {
  const database = await createPostgresDatabase();
  const servers: ServerProcess[] = [];
  let db: DbHandle | null = null;
  const close = async ({ kill = false } = {}) => {
    await Promise.all(servers.map((s) => (kill ? s.kill() : s.stop())));
    await db?.close();
    await database.drop();
  };
  try {
    for (const vars of options.servers ?? [{}]) {
      const env = childEnv({
        ...BASE_VARS,
        DATABASE_URL: database.url,
        INTERNAL_TOKEN: options.internalToken,
        ...options.env,
        ...vars,
      });
      servers.push(await startServerProcess(env));
    }
    db = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 2 });
  } catch (err) {
    await close({ kill: true }).catch(() => {});
    throw err;
  }
  return { databaseUrl: database.url, servers, db, close };
}
