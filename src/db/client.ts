/**
 * Database factory: postgres.js when DATABASE_URL is set, embedded PGlite otherwise. Both
 * drivers get the same Drizzle schema and the same migrations. The postgres.js pool comes with
 * repairs of driver faults, kept in postgres-js-repairs.ts.
 */

import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type { Logger } from "pino";
import { backoffMs } from "../retry.ts";
import type { LinkState } from "./link-watch.ts";
import { pgliteOptions } from "./pglite-setup.ts";
import { openRepairedPool, type PostgresClient, type SilenceBounds } from "./postgres-js-repairs.ts";
import * as schema from "./schema.ts";

/** Any Drizzle Postgres database over our schema, whichever driver is behind it. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

/** A transaction of that database (what `db.transaction` hands its callback). */
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];

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
  /**
   * Whether the database is known to be unreachable (a connection waited `silenceMs` for an
   * answer, the database said nothing meanwhile and failed a probe on a fresh connection; see
   * link-watch.ts), and the watch's counts. While down every query fails at once with
   * DatabaseUnreachable. Never down on PGlite.
   */
  link(): LinkState;
  close(): Promise<void>;
}

export interface DbOptions {
  /** postgres:// URL, or null for PGlite. */
  readonly databaseUrl: string | null;
  /** PGlite data directory, or "memory://" for a throwaway in-memory database. */
  readonly dataDir: string;
  readonly poolSize?: number;
  /**
   * postgres.js only: how long a connection may wait for an answer while the database says
   * nothing at all before it is probed on a fresh connection (default 5 s; DB_SILENCE_MS).
   */
  readonly silenceMs?: number;
  /** How long that probe may take before the link is taken for down (default 2 s). */
  readonly probeWithinMs?: number;
  /**
   * postgres.js only: PostgreSQL's idle_in_transaction_session_timeout for every connection
   * (default 15 s; DB_IDLE_IN_TRANSACTION_MS; 0 leaves the server's own setting).
   */
  readonly idleInTransactionMs?: number;
  /** Where the link watch says that the database went away and came back. */
  readonly logger?: Logger;
  /**
   * PGlite only: a data directory tarball (PGlite's dumpDataDir) a new database starts from
   * instead of the freshly initialised one; the tests start each file from one already migrated.
   */
  readonly startFrom?: Blob;
}

/** Plain rows of a Drizzle `execute` result, whichever driver produced it (also inside transactions). */
export function resultRows<T>(result: unknown): T[] {
  const withRows = result as { rows?: T[] };
  return Array.isArray(withRows.rows) ? withRows.rows : Array.from(result as Iterable<T>);
}

/** DB_SILENCE_MS's default: see docs/decisions.md, "A host cut off from its database". */
export const DEFAULT_SILENCE_MS = 5_000;
const DEFAULT_PROBE_WITHIN_MS = 2_000;
/** DB_IDLE_IN_TRANSACTION_MS's default: see docs/reliability.md, "What the tests found", 19. */
export const DEFAULT_IDLE_IN_TRANSACTION_MS = 15_000;
/**
 * TCP keepalive of the pool's sockets (s): postgres.js sets 60 by default, and Node 24 (libuv)
 * then probes every second, 10 times, so a dead idle connection is dropped 70 s after its last
 * word; 15 s brings that to 25 s and keeps NAT and load-balancer mappings alive.
 */
const KEEP_ALIVE_S = 15;

export const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

/** Opens (but does not migrate) the database described by the options. */
export async function openDb(options: DbOptions): Promise<DbHandle> {
  if (options.databaseUrl)
    return openPostgres(options.databaseUrl, {
      poolSize: options.poolSize ?? 10,
      idleInTransactionMs: options.idleInTransactionMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS,
      bounds: {
        silenceMs: options.silenceMs ?? DEFAULT_SILENCE_MS,
        probeWithinMs: options.probeWithinMs ?? DEFAULT_PROBE_WITHIN_MS,
        ...(options.logger ? { logger: options.logger } : {}),
      },
    });
  return openPglite(options.dataDir, options.startFrom);
}

/** openDb's options for PostgreSQL, defaults filled in. */
interface PostgresSettings {
  readonly poolSize: number;
  /** 0: the server's own idle_in_transaction_session_timeout. */
  readonly idleInTransactionMs: number;
  readonly bounds: SilenceBounds;
}

async function openPostgres(
  url: string,
  { poolSize, idleInTransactionMs, bounds }: PostgresSettings,
): Promise<DbHandle> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const pool = await openRepairedPool(
    (socket, refusing) =>
      postgres(url, {
        max: poolSize,
        onnotice: () => {},
        // Connection errors surface as rejected queries (mapped to 503), never as crashes.
        connect_timeout: 10,
        idle_timeout: 60,
        keep_alive: KEEP_ALIVE_S,
        // A startup parameter (accepted by managed PostgreSQL; see docs/scaling.md for poolers):
        // the backend of a transaction whose host was cut off mid-way (a silent partition) would
        // otherwise keep its row locks until the database's kernel gives up on the socket.
        ...(idleInTransactionMs > 0
          ? { connection: { idle_in_transaction_session_timeout: idleInTransactionMs } }
          : {}),
        // Pause before reconnecting after a failed connection: 0.1, 0.2, 0.4, 0.8, then 1 s. The
        // driver's default grows with every failure of any pool connection up to 20 s, so after an
        // outage of a few seconds the process kept callers waiting (and failing) for up to 20 s
        // more although the database was back (found by test/reliability/db-faults.test.ts).
        // The refusing client (the link is down) fails its queries one after another at once.
        backoff: refusing ? () => 0 : (retries: number) => backoffMs(retries + 1, 50, 1000, "none") / 1000,
        // A documented option missing from the driver's type declarations.
        ...({ socket } as object),
      }),
    bounds,
  );
  // One Drizzle database per pool (the pool changes after a fault; see postgres-js-repairs.ts).
  const databases = new WeakMap<PostgresClient, Database>();
  const database = (): Database => {
    const client = pool.current();
    let db = databases.get(client);
    if (!db) databases.set(client, (db = drizzle(client, { schema }) as unknown as Database));
    return db;
  };
  return {
    get db() {
      return database();
    },
    driver: "postgres",
    url,
    async rows<T>(query: SQL): Promise<T[]> {
      return resultRows<T>(await database().execute(query));
    },
    async prepared<T>(text: string, params: unknown[]): Promise<T[]> {
      const client = pool.current();
      // postgres.js needs JS arrays wrapped to send them as Postgres arrays.
      const values = params.map((p) => (Array.isArray(p) ? client.array(p as never[]) : p));
      const result = await client.unsafe(text, values as never[], { prepare: true });
      return Array.from(result) as T[];
    },
    listen: (channel, onPayload) => pool.listen(channel, onPayload),
    link: () => pool.link(),
    close: () => pool.close(),
  };
}

async function openPglite(dataDir: string, startFrom: Blob | undefined): Promise<DbHandle> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  if (!dataDir.startsWith("memory://")) mkdirSync(dataDir, { recursive: true });
  const options = pgliteOptions(dataDir, PGlite.defaultStartParams);
  const client = await PGlite.create(dataDir, startFrom ? { ...options, loadDataDir: startFrom } : options);
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
    link: () => ({ down: false, probes: 0, cuts: 0 }),
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

/**
 * How many of the shipped migrations the database has applied (drizzle's own record), or null
 * for applied when the database has never been migrated.
 */
export async function migrationStatus(handle: DbHandle): Promise<{ applied: number | null; shipped: number }> {
  const { readFileSync } = await import("node:fs");
  const journal = JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, "utf8")) as { entries: unknown[] };
  const { sql } = await import("drizzle-orm");
  const [exists] = await handle.rows<{ found: boolean }>(
    sql`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS found`,
  );
  if (!exists?.found) return { applied: null, shipped: journal.entries.length };
  const [row] = await handle.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`);
  return { applied: Number(row?.n ?? 0), shipped: journal.entries.length };
}
