import { describe, expect, it } from "vitest";
import { FailedKeyThrottle } from "../../../src/accounts/failed-key-throttle.ts";
import { createTestClock } from "../../support/test-server.ts";

function throttle(limit = 3, windowMs = 60_000) {
  const clock = createTestClock(1_000_000);
  return { clock, t: new FailedKeyThrottle({ limit, windowMs, clock }) };
}

describe("failed-key throttle", () => {
  it("lets an address fail `limit` times, then blocks it until its window ends", () => {
    const { clock, t } = throttle(3, 60_000);
    for (let i = 0; i < 3; i++) {
      expect(t.blockedFor("10.0.0.1", null)).toBe(0);
      t.recordFailure("10.0.0.1");
    }
    expect(t.blockedFor("10.0.0.1", null)).toBe(60_000);
    clock.advance(59_999);
    expect(t.blockedFor("10.0.0.1", "unknown-hash")).toBe(1);
    clock.advance(1);
    expect(t.blockedFor("10.0.0.1", null)).toBe(0);
  });

  it("never blocks other addresses", () => {
    const { t } = throttle(1);
    t.recordFailure("10.0.0.1");
    t.recordFailure("10.0.0.1");
    expect(t.blockedFor("10.0.0.1", null)).toBeGreaterThan(0);
    expect(t.blockedFor("10.0.0.2", null)).toBe(0);
  });

  it("lets a key that recently succeeded through a blocked address (valid callers behind the same NAT)", () => {
    const { clock, t } = throttle(1);
    t.recordSuccess("good");
    t.recordFailure("nat");
    t.recordFailure("nat");
    expect(t.blockedFor("nat", "good")).toBe(0);
    expect(t.blockedFor("nat", "other")).toBeGreaterThan(0);
    // Trust is not forever.
    clock.advance(24 * 3600 * 1000);
    t.recordFailure("nat");
    t.recordFailure("nat");
    expect(t.blockedFor("nat", "good")).toBeGreaterThan(0);
  });

  it("starts a new window after the old one ends", () => {
    const { clock, t } = throttle(2, 1000);
    t.recordFailure("a");
    clock.advance(1000);
    t.recordFailure("a");
    t.recordFailure("a");
    expect(t.blockedFor("a", null)).toBe(0 + 1000);
  });
});
