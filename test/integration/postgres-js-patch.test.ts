/**
 * A connection that closes in the middle of a transaction fails that transaction, and the
 * process lives (src/db/postgres-js-patch.ts). Unpatched, postgres.js 3.4.9 writes the
 * transaction's ROLLBACK to the closed connection and throws from a setImmediate: the server
 * process exits with every call in flight on it.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DbHandle, openDb } from "../../src/db/client.ts";
import { patchPostgresJs } from "../../src/db/postgres-js-patch.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

describe("the postgres.js patch applied at install", () => {
  const installed = new URL("../../node_modules/postgres/", import.meta.url);

  it("is in both of the installed driver's builds", () => {
    for (const file of ["src/connection.js", "cjs/src/connection.js"])
      expect(readFileSync(new URL(file, installed), "utf8")).toContain("if (socket === null) {");
  });

  it("patches an unpatched copy once, and refuses a driver whose code changed", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "postgres-js-patch-"));
    await mkdir(path.join(dir, "cjs/src"), { recursive: true });
    await mkdir(path.join(dir, "src"), { recursive: true });
    const unpatched = (file: string) =>
      readFileSync(new URL(file, installed), "utf8").replace(/ {4}if \(socket === null\) \{[\s\S]*?\n {4}\}\n/, "");
    for (const file of ["src/connection.js", "cjs/src/connection.js"])
      writeFileSync(path.join(dir, file), unpatched(file));
    const copy = pathToFileURL(`${dir}/`);
    expect(readFileSync(path.join(dir, "src/connection.js"), "utf8")).not.toContain("socket === null");
    expect(patchPostgresJs(copy)).toEqual(["src/connection.js", "cjs/src/connection.js"]);
    expect(patchPostgresJs(copy)).toEqual([]);
    expect(readFileSync(path.join(dir, "cjs/src/connection.js"), "utf8")).toContain("socket === null");

    writeFileSync(path.join(dir, "src/connection.js"), "function nextWrite(fn, other) {}\n");
    expect(() => patchPostgresJs(copy)).toThrow(/postgres.js changed/);
  });
});

describe.skipIf(!usingPostgres)("a transaction whose connection is closed under it (PostgreSQL)", () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let handle: DbHandle;
  let admin: postgres.Sql;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    handle = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: 2 });
    admin = postgres(database.url, { max: 1, onnotice: () => {} });
  });

  afterAll(async () => {
    await admin?.end({ timeout: 1 });
    await handle?.close();
    await database?.drop();
  });

  it("fails that transaction, and the process lives and queries again", async () => {
    const uncaught: unknown[] = [];
    const record = (err: unknown) => uncaught.push(err);
    process.on("uncaughtException", record);
    try {
      const marker = `patch_probe_${process.pid}`;
      const transaction = handle.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        await tx.execute(sql.raw(`select pg_sleep(60) as ${marker}`));
      });
      const outcome = transaction.then(
        () => "committed",
        (err: Error) => `failed: ${err.message}`,
      );
      // The backend is terminated once it is seen running the sleep (an event, not a delay).
      const until = Date.now() + EVENT_WAIT_MS;
      let terminated = 0;
      while (terminated === 0 && Date.now() < until) {
        const rows = await admin<{ ok: boolean }[]>`
          select pg_terminate_backend(pid) as ok from pg_stat_activity
          where query like ${`%${marker}%`} and pid <> pg_backend_pid() and state = 'active'`;
        terminated = rows.filter((r) => r.ok).length;
        if (terminated === 0) await new Promise((r) => setTimeout(r, 20));
      }
      expect(terminated).toBe(1);
      expect(await outcome).toMatch(/^failed: /);
      // The ROLLBACK's write is flushed from a setImmediate: let the loop turn past it.
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 0));
      expect(uncaught).toEqual([]);
      expect(await handle.rows<{ n: number }>(sql`select 1 as n`)).toEqual([{ n: 1 }]);
    } finally {
      process.off("uncaughtException", record);
    }
  });
});
