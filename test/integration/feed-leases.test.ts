/**
 * Feeder leases on the real database (PGlite, or Postgres with DATABASE_URL): one holder per
 * coin under any concurrency, renewal by the holder only, takeover only after expiry, release
 * by the holder only; and the PushCandles lease rule.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireLease, leaseAllows, liveLeaseHolders, releaseLeases } from "../../src/market/feed-leases.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

describe("feed leases", () => {
  it("twenty feeders racing for one coin: exactly one holds it", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => acquireLease(db.handle, `feeder-${i}`, "RACE", 10_000)),
    );
    const winners = results.filter((r) => r.held);
    expect(winners).toHaveLength(1);
    for (const r of results) expect(r.holder).toBe(winners[0]!.holder);
    expect(await liveLeaseHolders(db.handle, ["RACE"])).toEqual(new Map([["RACE", winners[0]!.holder]]));
  });

  it("the holder renews; another feeder is refused until the lease expires, then takes it", async () => {
    expect(await acquireLease(db.handle, "a", "EXP", 1_000)).toMatchObject({ held: true, holder: "a" });
    const refused = await acquireLease(db.handle, "b", "EXP", 1_000);
    expect(refused).toMatchObject({ held: false, holder: "a" });
    expect(refused.expiresInMs).toBeGreaterThan(0);
    expect(refused.expiresInMs).toBeLessThanOrEqual(1_000);
    expect(await acquireLease(db.handle, "a", "EXP", 1_000)).toMatchObject({ held: true });
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await liveLeaseHolders(db.handle, ["EXP"])).toEqual(new Map());
    expect(await acquireLease(db.handle, "b", "EXP", 1_000)).toMatchObject({ held: true, holder: "b" });
    expect(await acquireLease(db.handle, "a", "EXP", 1_000)).toMatchObject({ held: false, holder: "b" });
  });

  it("only the holder releases", async () => {
    await acquireLease(db.handle, "c", "REL", 10_000);
    expect(await releaseLeases(db.handle, "d", ["REL"])).toBe(0);
    expect(await releaseLeases(db.handle, "c", ["REL"])).toBe(1);
    expect(await acquireLease(db.handle, "d", "REL", 10_000)).toMatchObject({ held: true });
  });

  it("PushCandles rule: a named feeder must hold the lease; an unnamed sender only writes unleased coins", () => {
    expect(leaseAllows("a", "a")).toBe(true);
    expect(leaseAllows("a", "b")).toBe(false);
    expect(leaseAllows(undefined, "b")).toBe(false);
    expect(leaseAllows("a", null)).toBe(false);
    expect(leaseAllows(undefined, null)).toBe(true);
  });
});
