/**
 * Charge attempt ids are version-7 UUIDs: the purge deletes by id range and the primary-key
 * index is appended to, both of which need the time in the leading bits.
 */
import { describe, expect, it } from "vitest";
import { uuidV7 } from "../../../src/billing/charge.ts";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("uuidV7", () => {
  it("is a version-7, RFC-variant UUID whose first 48 bits are the milliseconds", () => {
    for (const now of [0, 1, 1_795_305_577_146, 2 ** 48 - 1]) {
      const id = uuidV7(now);
      expect(id).toMatch(V7);
      expect(Number.parseInt(id.slice(0, 13).replace("-", ""), 16)).toBe(now);
    }
  });

  it("orders ids by their millisecond and differs within one", () => {
    const ids = Array.from({ length: 1000 }, (_, i) => uuidV7(1_795_305_577_000 + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    // Every id of a millisecond sorts before every id of the next one.
    for (let i = 10; i < ids.length; i += 10) {
      const previous = ids.slice(i - 10, i);
      const next = ids.slice(i, i + 10);
      expect(previous.every((a) => next.every((b) => a < b))).toBe(true);
    }
  });
});
