/**
 * A fresh, migrated database per test file: in-memory PGlite by default (unpacked from a
 * migrated template, see migrated-pglite.ts), or a new database on the Postgres server named by
 * DATABASE_URL (created here, dropped in cleanup).
 */
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { type DbHandle, migrateDb, openDb } from "../../src/db/client.ts";
import { migratedTemplate } from "./migrated-pglite.ts";

export const usingPostgres = Boolean(process.env.DATABASE_URL);

export interface TestDb {
  readonly handle: DbHandle;
  /** postgres:// URL of the fresh database (null on PGlite). */
  readonly url: string | null;
  drop(): Promise<void>;
}

/** URL of the same server with another database name. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates an empty database on the Postgres server of DATABASE_URL and returns its URL. */
export async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL!;
  const name = `signals_test_${randomBytes(6).toString("hex")}`;
  const admin = postgres(withDatabase(base, "postgres"), { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  return {
    url: withDatabase(base, name),
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** Opens a fresh migrated database for one test file. */
export async function createTestDb(poolSize = 20): Promise<TestDb> {
  if (!usingPostgres) {
    const handle = await openDb({ databaseUrl: null, dataDir: "memory://", startFrom: migratedTemplate() });
    await migrateDb(handle);
    return { handle, url: null, drop: () => handle.close() };
  }
  const database = await createPostgresDatabase();
  const handle = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize });
  await migrateDb(handle);
  return {
    handle,
    url: database.url,
    async drop() {
      await handle.close();
      await database.drop();
    },
  };
}
