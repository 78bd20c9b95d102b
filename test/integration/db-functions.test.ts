/**
 * The SQL functions' readable sources in src/db/functions/ are what the migrated database runs:
 * re-creating each from its file leaves pg_get_functiondef unchanged, every function in the
 * database has a file, and the names the SQL shares with TypeScript (paid plans, NOTIFY
 * channels) are the same on both sides.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PAID_PLANS } from "../../src/accounts/entitlement.ts";
import * as channels from "../../src/db/channels.ts";
import { resultRows } from "../../src/db/client.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const FUNCTIONS_DIR = fileURLToPath(new URL("../../src/db/functions/", import.meta.url));
const sources = readdirSync(FUNCTIONS_DIR)
  .filter((f) => f.endsWith(".sql"))
  .map((f) => ({ name: path.basename(f, ".sql"), text: readFileSync(path.join(FUNCTIONS_DIR, f), "utf8") }));

let tdb: TestDb;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

class Rollback extends Error {}

async function functionDef(run: (q: ReturnType<typeof sql>) => Promise<unknown>, name: string): Promise<string> {
  const rows = resultRows<{ def: string }>(
    await run(
      sql`SELECT pg_get_functiondef(p.oid) AS def FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname = ${name}`,
    ),
  );
  expect(rows, `exactly one function named ${name}`).toHaveLength(1);
  return rows[0]!.def;
}

describe("src/db/functions", () => {
  it.each(sources.map((s) => [s.name, s] as const))(
    "%s.sql is the definition the " + "migrations left in force",
    async (_name, source) => {
      let before = "";
      let after = "";
      await tdb.handle.db
        .transaction(async (tx) => {
          before = await functionDef((q) => tx.execute(q), source.name);
          await tx.execute(sql.raw(source.text));
          after = await functionDef((q) => tx.execute(q), source.name);
          throw new Rollback();
        })
        .catch((err: unknown) => {
          if (!(err instanceof Rollback)) throw err;
        });
      expect(after).toBe(before);
    },
  );

  it("has a file for every function of the migrated database", async () => {
    const rows = await tdb.handle.rows<{ proname: string }>(sql`
      SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid
       AND d.deptype = 'e')`);
    expect(rows.map((r) => r.proname).sort()).toEqual(sources.map((s) => s.name).sort());
  });

  it("names the paid plans exactly as PAID_PLANS does", () => {
    const lists = sources.flatMap((s) =>
      [...s.text.matchAll(/plan NOT IN \(([^)]*)\)/g)].map((m) =>
        m[1]!.split(",").map((p) => p.trim().replace(/^'|'$/g, "")),
      ),
    );
    expect(lists.length).toBeGreaterThanOrEqual(2); // apply_monthly_grant and charge_call
    for (const list of lists) expect(list).toEqual([...PAID_PLANS]);
  });

  it("notifies only the channels of src/db/channels.ts", () => {
    const notified = sources.flatMap((s) => [...s.text.matchAll(/pg_notify\('([^']*)'/g)].map((m) => m[1]!));
    expect(notified).toContain(channels.OUTBOX_READY);
    for (const channel of notified) expect(Object.values(channels)).toContain(channel);
  });
});
