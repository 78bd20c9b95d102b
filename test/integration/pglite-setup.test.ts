/**
 * The embedded database's setup: a new data directory unpacked from the install-time template
 * is the same database initdb makes (same Postgres, same settings, migrations apply, data
 * survives a reopen), and both run with our settings (shared_buffers 16MB, not PGlite's 128MB).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { migrateDb, openDb } from "../../src/db/client.ts";
import { makePgliteTemplate, pgliteOptions, pgliteTemplate } from "../../src/db/pglite-setup.ts";

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "pglite-setup-"));
  dirs.push(dir);
  return path.join(dir, "data");
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const facts = async (dataDir: string) => {
  const handle = await openDb({ databaseUrl: null, dataDir });
  try {
    await migrateDb(handle);
    const [row] = await handle.rows<{ version: string; shared_buffers: string; accounts: number }>(
      sql`SELECT version() AS version, current_setting('shared_buffers') AS shared_buffers, (SELECT count(*)::int
        FROM accounts) AS accounts`,
    );
    return row!;
  } finally {
    await handle.close();
  }
};

describe("embedded database setup", () => {
  it("unpacks a new data directory from the template, the same database initdb makes, with our settings", async () => {
    if (!pgliteTemplate()) await makePgliteTemplate();
    const fromTemplate = freshDir();
    expect(pgliteOptions(fromTemplate, []).loadDataDir).toBeInstanceOf(Blob);
    const templated = await facts(fromTemplate);
    // an existing directory is opened, never overwritten
    expect(pgliteOptions(fromTemplate, []).loadDataDir).toBeUndefined();

    const { PGlite } = await import("@electric-sql/pglite");
    const initdbDir = freshDir();
    const viaInitdb = await PGlite.create(initdbDir, pgliteOptions(initdbDir, PGlite.defaultStartParams, false));
    await viaInitdb.close();
    const initialised = await facts(initdbDir);

    expect(templated).toEqual(initialised);
    expect(templated.shared_buffers).toBe("16MB");
    expect(await facts(fromTemplate)).toEqual(templated); // reopened: still there, still migrated
  }, 180_000);
});
