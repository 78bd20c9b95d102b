/**
 * The failed-key budget over the real database (both engines): exact under concurrency,
 * one budget per IPv4 address or IPv6 /64, windows that end, trusted keys passing a blocked
 * address, and nothing written for a valid key (issue 23, item 6).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FailedKeyThrottle, purgeFailedKeyWindows } from "../../src/accounts/failed-key-throttle.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { createTestClock } from "../support/test-server.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

function throttle(limit = 3, windowMs = 60_000) {
  const clock = createTestClock(1_000_000);
  return { clock, t: new FailedKeyThrottle({ limit, windowMs, clock, db: db.handle }) };
}

describe("failed-key budget in the database", () => {
  it("lets an address fail `limit` times, then answers the wait until its window ends", async () => {
    const { clock, t } = throttle(3, 60_000);
    for (let i = 0; i < 3; i++) {
      expect(t.blockedFor("10.0.0.1", null)).toBe(0);
      expect(await t.recordFailure("10.0.0.1")).toBe(0);
    }
    expect(await t.recordFailure("10.0.0.1")).toBe(60_000);
    expect(t.blockedFor("10.0.0.1", null)).toBe(60_000);
    clock.advance(59_999);
    expect(t.blockedFor("10.0.0.1", "unknown-hash")).toBe(1);
    clock.advance(1);
    expect(t.blockedFor("10.0.0.1", null)).toBe(0);
    // A new window: the budget is whole again.
    expect(await t.recordFailure("10.0.0.1")).toBe(0);
  });

  it("is exact under concurrency and shared by every throttle on the database (one per process)", async () => {
    const { clock } = throttle();
    const processes = Array.from(
      { length: 4 },
      () => new FailedKeyThrottle({ limit: 20, windowMs: 60_000, clock, db: db.handle }),
    );
    const waits = await Promise.all(Array.from({ length: 200 }, (_, i) => processes[i % 4]!.recordFailure("10.0.0.2")));
    expect(waits.filter((w) => w === 0)).toHaveLength(20);
    expect(waits.filter((w) => w > 0)).toHaveLength(180);
  });

  it("counts IPv6 per /64 and IPv4-mapped addresses as IPv4", async () => {
    const { t } = throttle(2);
    expect(await t.recordFailure("2001:db8:1:2::1")).toBe(0);
    expect(await t.recordFailure("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe(0);
    expect(await t.recordFailure("2001:0db8:0001:0002:abcd::9")).toBeGreaterThan(0);
    expect(t.blockedFor("2001:db8:1:2::77", null)).toBeGreaterThan(0);
    expect(t.blockedFor("2001:db8:1:3::1", null)).toBe(0);
    expect(await t.recordFailure("::ffff:192.0.2.9")).toBe(0);
    expect(await t.recordFailure("192.0.2.9")).toBe(0);
    expect(t.blockedFor("::ffff:192.0.2.9", null)).toBe(0);
    expect(await t.recordFailure("::ffff:192.0.2.9")).toBeGreaterThan(0);
    expect(t.blockedFor("192.0.2.9", null)).toBeGreaterThan(0);
  });

  it("lets a key that recently succeeded through a blocked address, for a day", async () => {
    const { clock, t } = throttle(1, 48 * 3_600_000);
    t.recordSuccess("good");
    await t.recordFailure("nat");
    expect(await t.recordFailure("nat")).toBeGreaterThan(0);
    expect(t.blockedFor("nat", "good")).toBe(0);
    expect(t.blockedFor("nat", "other")).toBeGreaterThan(0);
    clock.advance(24 * 3_600_000);
    expect(t.blockedFor("nat", "good")).toBeGreaterThan(0);
  });

  it("purges windows that ended", async () => {
    const { clock, t } = throttle(5, 1000);
    await t.recordFailure("10.9.9.9");
    const count = async () =>
      Number(
        (
          await db.handle.rows<{ n: number | string }>(
            sql`SELECT count(*) AS n FROM failed_key_windows WHERE address = '10.9.9.9'`,
          )
        )[0]!.n,
      );
    expect(await count()).toBe(1);
    clock.advance(1001);
    await purgeFailedKeyWindows(db.handle, clock(), 1000);
    expect(await count()).toBe(0);
  });
});
