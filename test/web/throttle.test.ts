/**
 * The failed sign-in budget on a real database (PGlite, or Postgres with DATABASE_URL), with a
 * small policy: per-address and per-email limits, the email budget reached only by several
 * addresses, concurrent failures all counted, a new window after the old one, and old counters
 * swept. The router's use of it (429 pages) is covered in security.test.ts.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordFailure, throttledFor, throttleKeys, throttleWaits, type ThrottlePolicy } from "../../src/web/throttle.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const POLICY: ThrottlePolicy = { windowMs: 60_000, perAddress: 3, perEmail: 5 };
const T0 = Date.parse("2026-11-15T04:00:00Z");

let db: TestDb;

beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

describe("sign-in throttle", () => {
  it("blocks an address after its limit, for the rest of the window, whatever email it tries", async () => {
    const keys = throttleKeys("192.0.2.1", "a@example.test");
    for (let i = 0; i < POLICY.perAddress; i++) {
      expect(await throttledFor(db.handle, keys, POLICY, T0 + i)).toBe(0);
      await recordFailure(db.handle, keys, POLICY, T0 + i);
    }
    expect(await throttledFor(db.handle, keys, POLICY, T0 + 10)).toBe(POLICY.windowMs - 10);
    expect(await throttledFor(db.handle, throttleKeys("192.0.2.1", "other@example.test"), POLICY, T0 + 10)).toBeGreaterThan(0);
    // Another address, same email: its own budget, and the email's is not used up yet.
    expect(await throttledFor(db.handle, throttleKeys("192.0.2.2", "a@example.test"), POLICY, T0 + 10)).toBe(0);
    // A new window after the old one.
    expect(await throttledFor(db.handle, keys, POLICY, T0 + POLICY.windowMs)).toBe(0);
  });

  it("blocks an email once failures from several addresses reach its limit; one address alone cannot", async () => {
    const email = "target@example.test";
    for (const [i, address] of ["198.51.100.1", "198.51.100.2"].entries()) {
      for (let j = 0; j < (i === 0 ? POLICY.perAddress : POLICY.perEmail - POLICY.perAddress); j++) await recordFailure(db.handle, throttleKeys(address, email), POLICY, T0);
    }
    expect(await throttledFor(db.handle, throttleKeys("198.51.100.9", email), POLICY, T0 + 1)).toBeGreaterThan(0);
    expect(await throttledFor(db.handle, throttleKeys("198.51.100.9", "someone.else@example.test"), POLICY, T0 + 1)).toBe(0);
    // The email key is case-insensitive and never stores the email itself.
    expect(await throttledFor(db.handle, throttleKeys("198.51.100.9", " TARGET@example.test "), POLICY, T0 + 1)).toBeGreaterThan(0);
    const keys = await db.handle.rows<{ throttle_key: string }>(sql`SELECT throttle_key FROM sign_in_failures`);
    expect(keys.some((k) => k.throttle_key.includes("example.test"))).toBe(false);
  });

  it("counts concurrent failures exactly (one guarded statement per key, no read-then-write)", async () => {
    const keys = throttleKeys("203.0.113.50", "race@example.test");
    await Promise.all(Array.from({ length: 20 }, () => recordFailure(db.handle, keys, POLICY, T0)));
    const [row] = await db.handle.rows<{ failures: number }>(sql`SELECT failures FROM sign_in_failures WHERE throttle_key = ${keys.address}`);
    expect(Number(row!.failures)).toBe(20);
  });

  it("sweeps counters whose window has passed", async () => {
    const later = T0 + 10 * POLICY.windowMs;
    await recordFailure(db.handle, throttleKeys("192.0.2.200", "late@example.test"), POLICY, later);
    const rows = await db.handle.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM sign_in_failures`);
    expect(Number(rows[0]!.n)).toBe(2);
  });

  it("keeps a scoped budget's counters apart: its own keys, not swept by the sign-in budget's shorter window", async () => {
    const scoped: ThrottlePolicy = { windowMs: 10 * POLICY.windowMs, perAddress: 2, perEmail: 2, scope: "reset:" };
    const email = "scoped@example.test";
    const scopedKeys = throttleKeys("192.0.2.77", email, scoped.scope);
    expect(scopedKeys.address.startsWith("reset:addr:")).toBe(true);
    await recordFailure(db.handle, scopedKeys, scoped, T0);
    await recordFailure(db.handle, scopedKeys, scoped, T0);
    // A sign-in failure two sign-in windows later sweeps old sign-in counters only.
    await recordFailure(db.handle, throttleKeys("192.0.2.78", "other-scope@example.test"), POLICY, T0 + 2 * POLICY.windowMs);
    expect(await throttleWaits(db.handle, scopedKeys, scoped, T0 + 2 * POLICY.windowMs)).toEqual({ address: 8 * POLICY.windowMs, email: 8 * POLICY.windowMs });
    // The sign-in budget of the same address and email is untouched.
    expect(await throttledFor(db.handle, throttleKeys("192.0.2.77", email), POLICY, T0 + 2 * POLICY.windowMs)).toBe(0);
  });
});
