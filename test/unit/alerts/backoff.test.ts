/**
 * The outbox worker's retry delay: exponential in the number of failed attempts, capped, and
 * jittered over the upper half of the ceiling, so a retry never comes sooner than half the
 * ceiling (the bound the delivery tests rely on) and never later than the ceiling.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffMs as anyBackoffMs } from "../../../src/retry.ts";

/** The outbox worker's delay: equal jitter. */
const backoffMs = (attempts: number, base: number, max: number, random?: () => number) =>
  anyBackoffMs(attempts, base, max, "equal", random);

const lowest = () => 0;
/** Math.random() is below 1; this is the largest double it can return. */
const highest = () => 1 - Number.EPSILON / 2;

/** The exponential ceiling after `attempts` failed attempts. */
const ceiling = (attempts: number, base: number, max: number) => Math.min(max, base * 2 ** Math.max(0, attempts - 1));

describe("backoffMs", () => {
  it("waits between half the base and the base after the first failure", () => {
    expect(backoffMs(1, 1000, 300_000, lowest)).toBe(500);
    expect(backoffMs(1, 1000, 300_000, highest)).toBe(1000);
    expect(backoffMs(1, 1000, 300_000, () => 0.5)).toBe(750);
  });

  it("doubles the ceiling with each failed attempt", () => {
    const lows = [1, 2, 3, 4, 5].map((n) => backoffMs(n, 100, 1_000_000, lowest));
    const highs = [1, 2, 3, 4, 5].map((n) => backoffMs(n, 100, 1_000_000, highest));
    expect(lows).toEqual([50, 100, 200, 400, 800]);
    expect(highs).toEqual([100, 200, 400, 800, 1600]);
  });

  it("stops growing at the maximum, however many attempts failed", () => {
    expect(backoffMs(10, 1000, 5000, highest)).toBe(5000);
    expect(backoffMs(10, 1000, 5000, lowest)).toBe(2500);
    // 2^(attempts-1) would overflow to Infinity long before this; the delay must stay finite.
    expect(backoffMs(5000, 1000, 5000, highest)).toBe(5000);
    expect(backoffMs(Number.MAX_SAFE_INTEGER, 1, 3_600_000, lowest)).toBe(1_800_000);
  });

  it("treats zero or negative attempts like the first", () => {
    expect(backoffMs(0, 200, 10_000, lowest)).toBe(100);
    expect(backoffMs(-3, 200, 10_000, highest)).toBe(200);
  });

  it("stays within [ceiling/2, ceiling] as a whole number of ms for any attempt, base, cap and jitter", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.integer({ min: 1, max: 24 * 3_600_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, base, maxRaw, r) => {
          const max = Math.max(base, maxRaw); // the config never lets the cap go below the base
          const delay = backoffMs(attempts, base, max, () => r);
          const c = ceiling(attempts, base, max);
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(Math.floor(c / 2));
          expect(delay).toBeLessThanOrEqual(c);
          // The lower bound never shrinks as failures accumulate.
          expect(backoffMs(attempts + 1, base, max, lowest)).toBeGreaterThanOrEqual(
            backoffMs(attempts, base, max, lowest),
          );
        },
      ),
    );
  });

  it("jitters with Math.random by default, within the same bounds", () => {
    const delays = Array.from({ length: 200 }, () => backoffMs(3, 1000, 300_000));
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(2000);
      expect(d).toBeLessThanOrEqual(4000);
    }
    // Jitter spreads retries of many messages that failed together (not one value for all).
    expect(new Set(delays).size).toBeGreaterThan(10);
  });
});
