/**
 * Database factory: postgres.js when DATABASE_URL is set, embedded PGlite otherwise. Both
 * drivers get the same Drizzle schema and the same migrations.
 */
import { fileURLToPath } from "node:url";
import { mkdirSync } from "node:fs";
import net from "node:net";
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import * as schema from "./schema.ts";

/** Any Drizzle Postgres database over our schema, whichever driver is behind it. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface DbHandle {
  readonly db: Database;
  readonly driver: "postgres" | "pglite";
  /** postgres:// URL (null for PGlite). */
  readonly url: string | null;
  /** Runs raw SQL and returns plain rows, hiding the drivers' different result shapes. */
  rows<T = Record<string, unknown>>(query: SQL): Promise<T[]>;
  /**
   * Runs one fixed SQL text with positional parameters as a prepared statement (postgres.js
   * prepares and caches it per connection). For the hottest queries: it skips the query
   * builder, which measured ~30% of a charge's client-side cost.
   */
  prepared<T = Record<string, unknown>>(text: string, params: unknown[]): Promise<T[]>;
  /** Subscribes to a NOTIFY channel (other processes on the same database). */
  listen(channel: string, onPayload: (payload: string) => void): Promise<void>;
  close(): Promise<void>;
}

export interface DbOptions {
  /** postgres:// URL, or null for PGlite. */
  readonly databaseUrl: string | null;
  /** PGlite data directory, or "memory://" for a throwaway in-memory database. */
  readonly dataDir: string;
  readonly poolSize?: number;
}

/** Plain rows of a Drizzle `execute` result, whichever driver produced it (also inside transactions). */
export function resultRows<T>(result: unknown): T[] {
  const withRows = result as { rows?: T[] };
  return Array.isArray(withRows.rows) ? withRows.rows : Array.from(result as Iterable<T>);
}

export const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

/** Opens (but does not migrate) the database described by the options. */
export async function openDb(options: DbOptions): Promise<DbHandle> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolSize ?? 10);
  return openPglite(options.dataDir);
}

/**
 * A TCP socket for postgres.js that works around two fault-handling bugs of postgres.js 3.4.9
 * (the latest release), both found by test/reliability/db-faults.test.ts:
 *
 * 1. A query handed to a connection between its socket's 'error' and 'close' events (a reset
 *    socket emits them one event-loop turn apart) is written nowhere and never settles: the
 *    driver rejects a connection's queries on 'error' but leaves the pool's queues only on
 *    'close'. Here 'error' is held back and emitted right before 'close', in the same tick, so
 *    the connection is out of the queues before any promise callback can route a query to it.
 * 2. A connection that closes while a small write is still batched (it is flushed from a
 *    setImmediate) keeps that stale batch and a cancelled-but-set timer forever: its next
 *    connection never sends its startup message (CONNECT_TIMEOUT after connect_timeout, again
 *    and again), or later sends the stale bytes first (porsager/postgres issues #1130, #1193
 *    and the unmerged fixes around them). The driver's state is out of reach, so `onFault` is
 *    called whenever that can have happened (a connected socket that failed or was closed by the
 *    server, or one whose startup message did not follow its connect), and the handle below
 *    replaces the whole pool.
 *
 * Only plain TCP connections get the first fix: with TLS, postgres.js wraps the socket in its own.
 */
function faultReportingSocket(options: { host: string[]; port: number[]; path?: string | false }, onFault: () => void): net.Socket {
  const socket = new net.Socket();
  const emit = socket.emit as (this: net.Socket, event: string | symbol, ...args: unknown[]) => boolean;
  let held: unknown = null;
  let closed = false;
  let connected = false;
  let wrote = false;
  let endedByDriver = false;
  socket.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "error" && !closed) {
      held ??= args[0];
      return true;
    }
    if (event === "connect") {
      connected = true;
      // A healthy driver wrote its startup message before the connect completed (it waits in the
      // socket's buffer), at the latest from an immediate queued before this one.
      setImmediate(() => {
        if (!wrote && !closed) onFault();
      });
    }
    if (event === "close") {
      closed = true;
      if (connected && (held !== null || !endedByDriver)) onFault();
      if (held !== null) emit.call(this, "error", held);
      held = null;
    }
    return emit.call(this, event, ...args);
  } as typeof socket.emit;
  if (options.path) socket.connect(options.path);
  else socket.connect(options.port[0]!, options.host[0]!);
  socket.setNoDelay(true);
  // After connect(): it resets an instance's `write` to the prototype's.
  const write = socket.write;
  const end = socket.end;
  socket.write = function (this: net.Socket, ...args: unknown[]) {
    wrote = true;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof socket.write;
  socket.end = function (this: net.Socket, ...args: unknown[]) {
    endedByDriver = true;
    return (end as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof socket.end;
  return socket;
}

/** A pool is replaced at most this often; a fault within that time waits for the next turn. */
const REPLACE_POOL_EVERY_MS = 250;
/** How long a replaced pool may finish what it was doing before its connections are destroyed. */
const RETIRED_POOL_GRACE_S = 5;

async function openPostgres(url: string, poolSize: number): Promise<DbHandle> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  type Client = ReturnType<typeof postgres>;
  interface Pool {
    client: Client;
    db: Database;
  }
  const listeners: Array<[string, (payload: string) => void]> = [];
  let closing = false;
  /** Replaced pools still finishing their queries (awaited by close()). */
  const retiring = new Set<Promise<void>>();
  let replacedAt = 0;
  let replaceTimer: NodeJS.Timeout | null = null;
  const openPool = (): Pool => {
    const pool = {} as Pool;
    pool.client = postgres(url, {
      max: poolSize,
      onnotice: () => {},
      // Connection errors surface as rejected queries (mapped to 503), never as crashes.
      connect_timeout: 10,
      idle_timeout: 60,
      // Pause before reconnecting after a failed connection: 0.1, 0.2, 0.4, 0.8, then 1 s. The
      // driver's default grows with every failure of any pool connection up to 20 s, so after an
      // outage of a few seconds the process kept callers waiting (and failing) for up to 20 s
      // more although the database was back (found by test/reliability/db-faults.test.ts).
      backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
      // A documented option missing from the driver's type declarations.
      ...({
        socket: (options: Parameters<typeof faultReportingSocket>[0]) => faultReportingSocket(options, () => onFault(pool)),
      } as object),
    });
    pool.db = drizzle(pool.client, { schema }) as unknown as Database;
    return pool;
  };
  let current = openPool();
  /**
   * Gives a new pool the array types the old one learnt. postgres.js fetches them on each new
   * connection but builds that connection's first query before storing them, so the first
   * queries of a fresh pool sent array parameters as text ("malformed array literal").
   */
  const seedArrayTypes = (from: Client, to: Client) => {
    type TypeOptions = { shared: { typeArrayMap: Record<string, number> }; parsers: Record<string, unknown>; serializers: Record<string, unknown> };
    const source = (from as unknown as { options: TypeOptions }).options;
    const target = (to as unknown as { options: TypeOptions }).options;
    for (const [oid, typarray] of Object.entries(source.shared.typeArrayMap)) {
      target.shared.typeArrayMap[oid] = typarray;
      target.parsers[typarray] ??= source.parsers[typarray];
      target.serializers[typarray] ??= source.serializers[typarray];
    }
  };
  /** Stops the pool's connections from fetching array types when they connect (options are read per connection). */
  const noTypeFetching = (client: Client) => {
    (client as unknown as { options: { fetch_types: boolean } }).options.fetch_types = false;
  };
  // New queries go to a fresh pool; the old one finishes (or, after the grace, fails) its own.
  const replace = () => {
    replaceTimer = null;
    if (closing) return;
    replacedAt = Date.now();
    const old = current;
    current = openPool();
    seedArrayTypes(old.client, current.client);
    noTypeFetching(current.client);
    for (const [channel, onPayload] of listeners) current.client.listen(channel, onPayload).catch(() => {});
    const ended = old.client.end({ timeout: RETIRED_POOL_GRACE_S }).catch(() => {});
    retiring.add(ended);
    void ended.then(() => retiring.delete(ended));
  };
  const onFault = (pool: Pool) => {
    if (pool !== current || closing || replaceTimer !== null) return;
    replaceTimer = setTimeout(replace, Math.max(0, replacedAt + REPLACE_POOL_EVERY_MS - Date.now()));
  };
  // Connects now, so the first pool learns the array types before any query that sends arrays
  // (see seedArrayTypes); a database that cannot be reached fails the open (callers retry).
  try {
    await current.client`SELECT 1`;
    // Every later connection would fetch the types again, first thing: a connection cut during
    // that fetch rejected a promise nobody handles inside postgres.js, and the process died of
    // an unhandled rejection (RELIABILITY_FULL run of test/reliability/db-faults.test.ts). The
    // types are known now; replacement pools are seeded with them and do not fetch either.
    noTypeFetching(current.client);
  } catch (err) {
    await current.client.end({ timeout: 0 }).catch(() => {});
    throw err;
  }
  return {
    get db() {
      return current.db;
    },
    driver: "postgres",
    url,
    async rows<T>(query: SQL): Promise<T[]> {
      return resultRows<T>(await current.db.execute(query));
    },
    async prepared<T>(text: string, params: unknown[]): Promise<T[]> {
      const { client } = current;
      // postgres.js needs JS arrays wrapped to send them as Postgres arrays.
      const values = params.map((p) => (Array.isArray(p) ? client.array(p as never[]) : p));
      const result = await client.unsafe(text, values as never[], { prepare: true });
      return Array.from(result) as T[];
    },
    async listen(channel, onPayload) {
      listeners.push([channel, onPayload]);
      await current.client.listen(channel, onPayload);
    },
    async close() {
      closing = true;
      if (replaceTimer !== null) clearTimeout(replaceTimer);
      // By now the callers are answered or gone (the listeners closed first): a query still
      // running belongs to none of them, so shutdown waits for it 1 s, not 5 (found by the
      // SIGTERM test in test/reliability/process-faults.test.ts: 10 s grace + 5 s = 15 s).
      await Promise.all([current.client.end({ timeout: 1 }), Promise.race([Promise.all(retiring), new Promise((r) => setTimeout(r, 1_000).unref())])]);
    },
  };
}

async function openPglite(dataDir: string): Promise<DbHandle> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  if (!dataDir.startsWith("memory://")) mkdirSync(dataDir, { recursive: true });
  const client = await PGlite.create(dataDir);
  const db = drizzle(client, { schema }) as unknown as Database;
  return {
    db,
    driver: "pglite",
    url: null,
    async rows<T>(query: SQL): Promise<T[]> {
      return resultRows<T>(await db.execute(query));
    },
    async prepared<T>(text: string, params: unknown[]): Promise<T[]> {
      return (await client.query<T>(text, params)).rows;
    },
    async listen(channel, onPayload) {
      await client.listen(channel, onPayload);
    },
    async close() {
      await client.close();
    },
  };
}

/** Advisory-lock key that serialises migrations of processes starting together. */
const MIGRATION_LOCK_KEY = 4_242_001;

/**
 * Applies every pending migration (idempotent; safe to run at each start). On Postgres the
 * run holds an advisory lock on a connection of its own, so processes starting at the same
 * time migrate one after the other instead of racing on CREATE TABLE.
 */
export async function migrateDb(handle: DbHandle): Promise<void> {
  if (handle.driver === "postgres") {
    const { default: postgres } = await import("postgres");
    const { migrate } = await import("drizzle-orm/postgres-js/migrator");
    const lock = postgres(handle.url!, { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      await lock`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
      await migrate(handle.db as never, { migrationsFolder });
    } finally {
      await lock.end({ timeout: 5 });
    }
  } else {
    const { migrate } = await import("drizzle-orm/pglite/migrator");
    await migrate(handle.db as never, { migrationsFolder });
  }
}
