/**
 * The attempt budgets on a real database (PGlite, or Postgres with DATABASE_URL), with a small
 * policy: `reserve_attempt` counts and refuses in one statement (parallel reservations never
 * pass a limit), all keys or none, a new window after the old one, refunds, and old counters
 * swept per scope. The routes' use of it is covered in security.test.ts and
 * test/reliability/sign-in-bursts.test.ts.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  attemptsOn,
  refundAttempt,
  reserveAttempt,
  reserveOnBoth,
  sweepExpired,
  type ThrottlePolicy,
  throttleKeys,
} from "../../src/accounts/attempt-throttle.ts";
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

const failuresOf = async (key: string) =>
  Number(
    (
      await db.handle.rows<{ failures: number }>(sql`SELECT failures FROM sign_in_failures WHERE throttle_key = ${key}`)
    )[0]?.failures ?? 0,
  );

describe("attempt budgets", () => {
  it("refuses an address past its limit for the rest of the window, whatever email it tries", async () => {
    const keys = throttleKeys("192.0.2.1", "a@example.test");
    for (let i = 0; i < POLICY.perAddress; i++) expect(await reserveOnBoth(db.handle, keys, POLICY, T0 + i)).toBe(0);
    expect(await reserveOnBoth(db.handle, keys, POLICY, T0 + 10)).toBe(POLICY.windowMs - 10);
    expect(
      await reserveOnBoth(db.handle, throttleKeys("192.0.2.1", "other@example.test"), POLICY, T0 + 10),
    ).toBeGreaterThan(0);
    // Another address, same email: its own budget, and the email's is not used up yet.
    expect(await reserveOnBoth(db.handle, throttleKeys("192.0.2.2", "a@example.test"), POLICY, T0 + 10)).toBe(0);
    // A new window after the old one.
    expect(await reserveOnBoth(db.handle, keys, POLICY, T0 + POLICY.windowMs)).toBe(0);
  });

  it("reserves on every key or on none: a refused attempt counts nowhere", async () => {
    const keys = throttleKeys("192.0.2.3", "none@example.test");
    const before = await failuresOf(keys.address);
    const full = [{ key: keys.email, limit: 0 }];
    expect(
      await reserveAttempt(db.handle, [{ key: keys.address, limit: 100 }, ...full], POLICY.windowMs, T0),
    ).toBeGreaterThan(0);
    expect(await failuresOf(keys.address)).toBe(before);
    // A null limit only counts.
    for (let i = 0; i < 5; i++)
      expect(await reserveAttempt(db.handle, [{ key: keys.pair, limit: null }], POLICY.windowMs, T0)).toBe(0);
    expect(await attemptsOn(db.handle, keys.pair, POLICY.windowMs, T0)).toBe(5);
    await refundAttempt(db.handle, [keys.pair]);
    expect(await attemptsOn(db.handle, keys.pair, POLICY.windowMs, T0)).toBe(4);
    expect(await attemptsOn(db.handle, keys.pair, POLICY.windowMs, T0 + POLICY.windowMs)).toBe(0);
  });

  it("never reserves past the limit, however many reserve at once (one statement counts and refuses)", async () => {
    const keys = throttleKeys("203.0.113.50", "race@example.test");
    const budgets = [
      { key: keys.address, limit: 10 },
      { key: keys.pair, limit: 10 },
      { key: keys.email, limit: null },
    ];
    const waits = await Promise.all(
      Array.from({ length: 60 }, () => reserveAttempt(db.handle, budgets, POLICY.windowMs, T0)),
    );
    expect(waits.filter((w) => w === 0).length).toBe(10);
    expect(await failuresOf(keys.address)).toBe(10);
    expect(await failuresOf(keys.email)).toBe(10);
  });

  it("keeps the email hashed and case-insensitive in its keys", async () => {
    const a = throttleKeys("198.51.100.9", " TARGET@example.test ");
    const b = throttleKeys("198.51.100.9", "target@example.test");
    expect(a).toEqual(b);
    expect(Object.values(a).some((k) => k.includes("example.test"))).toBe(false);
    expect(throttleKeys("198.51.100.10", "target@example.test").pair).not.toBe(a.pair);
  });

  it("sweeps counters whose window has passed, and only its own scope's", async () => {
    const scoped: ThrottlePolicy = { windowMs: 10 * POLICY.windowMs, perAddress: 2, perEmail: 2, scope: "reset:" };
    const scopedKeys = throttleKeys("192.0.2.77", "scoped@example.test", scoped.scope);
    expect(scopedKeys.address.startsWith("reset:addr:")).toBe(true);
    expect(await reserveOnBoth(db.handle, scopedKeys, scoped, T0)).toBe(0);
    const later = T0 + 3 * POLICY.windowMs;
    await sweepExpired(db.handle, POLICY, later);
    const left = await db.handle.rows<{ throttle_key: string }>(sql`SELECT throttle_key FROM sign_in_failures`);
    expect(left.map((r) => r.throttle_key).sort()).toEqual([scopedKeys.address, scopedKeys.email].sort());
  });
});
