/**
 * The migration that merged the setup links and the reset links into one table keeps every
 * link as it was: a link made before the upgrade still opens, for the same account, with its
 * kind, until the same expiry; a used link stays used. Runs the migrations up to the one
 * before, writes links the old way, then runs the rest.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkPasswordLink, redeemPasswordLink } from "../../src/accounts/sign-in/password-links.ts";
import { type DbHandle, migrateDb, migrationsFolder, openDb } from "../../src/db/client.ts";
import { hashToken, newToken } from "../../src/one-time-token.ts";
import { TEST_PASSWORD_COST } from "../support/password-cost.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";

const MERGE = "0032_password_links";
const NOW = Date.parse("2026-11-20T12:00:00Z");
const HOUR = 3600_000;

/** A copy of the migrations that stops before the merge. */
function migrationsBeforeMerge(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "signals-migrations-"));
  cpSync(migrationsFolder, dir, { recursive: true });
  const journalFile = path.join(dir, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: Array<{ tag: string }> };
  const at = journal.entries.findIndex((e) => e.tag === MERGE);
  expect(at).toBeGreaterThan(0);
  journal.entries = journal.entries.slice(0, at);
  writeFileSync(journalFile, JSON.stringify(journal));
  return dir;
}

async function migrateWith(handle: DbHandle, folder: string): Promise<void> {
  const { migrate } =
    handle.driver === "postgres"
      ? await import("drizzle-orm/postgres-js/migrator")
      : await import("drizzle-orm/pglite/migrator");
  await migrate(handle.db as never, { migrationsFolder: folder });
}

let handle: DbHandle;
let drop: () => Promise<void> = async () => {};
let oldFolder: string;
const tokens = { setup: newToken(), usedSetup: newToken(), reset: newToken() };
let ids: { setup: number; usedSetup: number; reset: number };

beforeAll(async () => {
  if (usingPostgres) {
    const database = await createPostgresDatabase();
    handle = await openDb({ databaseUrl: database.url, dataDir: "memory://", poolSize: 2 });
    drop = database.drop;
  } else {
    handle = await openDb({ databaseUrl: null, dataDir: "memory://" });
  }
  oldFolder = migrationsBeforeMerge();
  await migrateWith(handle, oldFolder);
  const account = async (email: string) =>
    Number(
      (
        await handle.rows<{ id: number }>(
          sql`INSERT INTO accounts (email, plan, email_verified) VALUES (${email}, 'free', false) RETURNING id`,
        )
      )[0]!.id,
    );
  ids = {
    setup: await account("setup@example.test"),
    usedSetup: await account("used@example.test"),
    reset: await account("reset@example.test"),
  };
  const at = (ms: number) => new Date(ms).toISOString();
  await handle.rows(
    sql`INSERT INTO password_setup_tokens (token_hash, account_id, expires_at) VALUES (${hashToken(tokens.setup)},
      ${ids.setup}, ${at(NOW + 24 * HOUR)}::timestamptz)`,
  );
  await handle.rows(
    sql`INSERT INTO password_setup_tokens (token_hash, account_id, expires_at, used_at)
      VALUES (${hashToken(tokens.usedSetup)}, ${ids.usedSetup}, ${at(NOW + 24 * HOUR)}::timestamptz,
      ${at(NOW - HOUR)}::timestamptz)`,
  );
  await handle.rows(
    sql`INSERT INTO password_resets (token_hash, account_id, created_at, expires_at) VALUES (${hashToken(tokens.reset)},
      ${ids.reset}, ${at(NOW)}::timestamptz, ${at(NOW + HOUR)}::timestamptz)`,
  );
  await migrateDb(handle);
}, 120_000);

afterAll(async () => {
  await handle?.close();
  await drop();
  if (oldFolder) rmSync(oldFolder, { recursive: true, force: true });
});

describe("merging the setup and reset links into password_links", () => {
  it("keeps an unused setup link working for its account, as a setup link, until the same expiry", async () => {
    expect(await checkPasswordLink(handle, tokens.setup, "setup", NOW)).toEqual({
      accountId: ids.setup,
      email: "setup@example.test",
      kind: "setup",
    });
    expect(await checkPasswordLink(handle, tokens.setup, "setup", NOW + 24 * HOUR)).toBeNull();
  });

  it("keeps a used setup link used", async () => {
    expect(await checkPasswordLink(handle, tokens.usedSetup, "setup", NOW)).toBeNull();
  });

  it("keeps a reset link working as a reset link: using it sets the password and confirms the email", async () => {
    expect(await checkPasswordLink(handle, tokens.reset, "reset", NOW + HOUR - 1)).toEqual({
      accountId: ids.reset,
      email: "reset@example.test",
      kind: "reset",
    });
    expect(
      await redeemPasswordLink(handle, tokens.reset, "reset", "a long new password", NOW, TEST_PASSWORD_COST),
    ).toEqual({
      accountId: ids.reset,
      kind: "reset",
    });
    const [row] = await handle.rows<{ verified: boolean }>(
      sql`SELECT email_verified AS verified FROM accounts WHERE id = ${ids.reset}`,
    );
    expect(row!.verified).toBe(true);
  });

  it("leaves no table of the old kind", async () => {
    const [row] = await handle.rows<{ setup: string | null; reset: string | null }>(
      sql`SELECT to_regclass('password_setup_tokens')::text AS setup, to_regclass('password_resets')::text AS reset`,
    );
    expect(row).toEqual({ setup: null, reset: null });
  });
});
