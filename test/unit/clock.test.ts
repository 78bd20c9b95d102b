import { describe, expect, it } from "vitest";
import { mytDay, mytMonth, nextMytMidnight, nextMytMonthStart } from "../../src/clock.ts";

const at = (iso: string) => Date.parse(iso);

describe("Malaysia time (UTC+8, no DST)", () => {
  it("changes day at 16:00 UTC", () => {
    expect(mytDay(at("2026-11-15T15:59:59.999Z"))).toBe("2026-11-15");
    expect(mytDay(at("2026-11-15T16:00:00.000Z"))).toBe("2026-11-16");
  });
  it("changes month at 00:00 MYT on the 1st", () => {
    expect(mytMonth(at("2026-11-30T15:59:59.999Z"))).toBe("2026-11-01");
    expect(mytMonth(at("2026-11-30T16:00:00.000Z"))).toBe("2026-12-01");
    expect(mytMonth(at("2026-12-31T16:00:00.000Z"))).toBe("2027-01-01");
  });
  it("gives each instant its own day when calls move back and forth across midnight", () => {
    const instants = [
      "2026-11-15T15:59:59.999Z",
      "2026-11-15T16:00:00.000Z",
      "2026-11-15T15:00:00.000Z",
      "1999-12-31T16:00:00.000Z",
      "2026-11-16T01:00:00.000Z",
    ];
    for (const iso of [...instants, ...instants.reverse()]) {
      const expected = new Date(at(iso) + 8 * 3600_000).toISOString().slice(0, 10);
      expect(mytDay(at(iso))).toBe(expected);
      expect(mytMonth(at(iso))).toBe(`${expected.slice(0, 8)}01`);
    }
  });
  it("finds the next local midnight", () => {
    expect(nextMytMidnight(at("2026-11-15T04:00:00Z"))).toBe(at("2026-11-15T16:00:00Z"));
    expect(nextMytMidnight(at("2026-11-15T16:00:00Z"))).toBe(at("2026-11-16T16:00:00Z"));
  });
  it("finds the next grant instant", () => {
    expect(nextMytMonthStart(at("2026-11-15T04:00:00Z"))).toBe(at("2026-11-30T16:00:00Z"));
    expect(nextMytMonthStart(at("2026-12-31T16:30:00Z"))).toBe(at("2027-01-31T16:00:00Z"));
  });
});
