/**
 * The one display of a new key and the one use of a confirmation, on a real database (PGlite,
 * or Postgres with DATABASE_URL): the sealed row opens once, for its account and token only,
 * not after its five minutes (and is purged then), and two regenerations from one confirmation
 * at the same time make one key. The pages' use of it is in security.test.ts and browser.test.ts.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activeKeyId, createAccount, regenerateKeyIfCurrent } from "../../src/accounts/accounts.ts";
import {
  createKeyReveal,
  KEY_REVEAL_TTL_MS,
  purgeExpiredKeyReveals,
  takeKeyReveal,
} from "../../src/accounts/key-reveal.ts";
import { loadConfig } from "../../src/config.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const T0 = Date.parse("2026-11-15T04:00:00Z");
const limits = loadConfig({}).limits;
let db: TestDb;
let ana: number;
let bob: number;

beforeAll(async () => {
  db = await createTestDb();
  const until = new Date(T0 + 30 * 86_400_000);
  ana = (
    await createAccount(db.handle, { email: "ana@example.test", plan: "node", subscriptionUntil: until }, limits, T0)
  ).summary.accountId;
  bob = (
    await createAccount(db.handle, { email: "bob@example.test", plan: "node", subscriptionUntil: until }, limits, T0)
  ).summary.accountId;
});
afterAll(async () => {
  await db?.drop();
});

const waiting = async (accountId: number) =>
  (
    await db.handle.rows<{ sealed_key: string }>(
      sql`SELECT sealed_key FROM key_reveals WHERE account_id = ${accountId}`,
    )
  ).length;

describe("key reveal", () => {
  it("opens once, for its own account and token, and stores neither the key nor the token", async () => {
    const key = "sig_live_0123456789abcdefghijABCDEFGHIJ012345";
    const token = await createKeyReveal(db.handle, ana, key, T0);
    const [row] = await db.handle.rows<{ token_hash: string; sealed_key: string }>(
      sql`SELECT token_hash, sealed_key FROM key_reveals WHERE account_id = ${ana}`,
    );
    expect(row!.sealed_key).not.toContain("sig_live_");
    expect(Buffer.from(row!.sealed_key, "base64url").toString("latin1")).not.toContain("0123456789abcdef");
    expect(row!.token_hash).not.toBe(token);
    expect(await takeKeyReveal(db.handle, bob, token, T0 + 1)).toBeNull();
    expect(
      await takeKeyReveal(db.handle, ana, token.slice(0, -1) + (token.endsWith("A") ? "B" : "A"), T0 + 1),
    ).toBeNull();
    expect(await takeKeyReveal(db.handle, ana, "not a token", T0 + 1)).toBeNull();
    expect(await takeKeyReveal(db.handle, ana, undefined, T0 + 1)).toBeNull();
    expect(await takeKeyReveal(db.handle, ana, token, T0 + 1)).toBe(key);
    expect(await takeKeyReveal(db.handle, ana, token, T0 + 2)).toBeNull();
    expect(await waiting(ana)).toBe(0);
  });

  it("does not open after its time, is purged then, and a newer key replaces a waiting one", async () => {
    const old = await createKeyReveal(db.handle, ana, "sig_live_old", T0);
    const token = await createKeyReveal(db.handle, ana, "sig_live_new", T0 + 1);
    expect(await waiting(ana)).toBe(1);
    expect(await takeKeyReveal(db.handle, ana, old, T0 + 2)).toBeNull();
    expect(await takeKeyReveal(db.handle, ana, token, T0 + 1 + KEY_REVEAL_TTL_MS)).toBeNull();
    expect(await purgeExpiredKeyReveals(db.handle, T0 + KEY_REVEAL_TTL_MS)).toBe(0);
    expect(await purgeExpiredKeyReveals(db.handle, T0 + 1 + KEY_REVEAL_TTL_MS)).toBe(1);
    expect(await waiting(ana)).toBe(0);
  });

  it("regenerates once from one confirmation, even when it is sent twice at the same time", async () => {
    const replaces = await activeKeyId(db.handle, bob);
    expect(replaces).not.toBeNull();
    const results = await Promise.all([0, 1, 2].map(() => regenerateKeyIfCurrent(db.handle, bob, replaces, T0)));
    expect(results.filter((k) => k !== null)).toHaveLength(1);
    const [{ keys }] = (await db.handle.rows<{ keys: number }>(
      sql`SELECT count(*)::int AS keys FROM api_keys WHERE account_id = ${bob}`,
    )) as [{ keys: number }];
    expect(keys).toBe(2);
    expect(await regenerateKeyIfCurrent(db.handle, bob, replaces, T0)).toBeNull();
    expect(await regenerateKeyIfCurrent(db.handle, bob, await activeKeyId(db.handle, bob), T0)).not.toBeNull();
  });
});
