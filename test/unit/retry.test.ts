/** The shared retry timing: full jitter really spans [0, ceiling]; Retry-After in its two forms. */
import { describe, expect, it } from "vitest";
import { backoffMs, retryAfterMs } from "../../src/retry.ts";

describe("backoffMs with full jitter", () => {
  it("spans zero to the capped ceiling", () => {
    expect(backoffMs(3, 500, 30_000, "full", () => 0)).toBe(0);
    expect(backoffMs(3, 500, 30_000, "full", () => 1 - Number.EPSILON / 2)).toBe(2000);
    expect(backoffMs(50, 500, 30_000, "full", () => 1 - Number.EPSILON / 2)).toBe(30_000);
  });

  it("is the default and spreads delays over the whole range", () => {
    const delays = Array.from({ length: 400 }, () => backoffMs(4, 1000, 60_000));
    for (const d of delays) expect(d >= 0 && d <= 8000).toBe(true);
    expect(delays.some((d) => d < 2000)).toBe(true); // below base/2: the old "full jitter" never went there
  });

  it("without jitter is exactly the ceiling", () => {
    expect([0, 1, 2, 3, 9].map((n) => backoffMs(n, 100, 1000, "none"))).toEqual([100, 100, 200, 400, 1000]);
  });
});

describe("retryAfterMs", () => {
  const NOW = Date.UTC(2026, 0, 1);
  it("reads delta-seconds and HTTP dates, and nothing else", () => {
    expect(retryAfterMs(" 2 ", NOW)).toBe(2000);
    expect(retryAfterMs(new Date(NOW + 5000).toUTCString(), NOW)).toBe(5000);
    expect(retryAfterMs(undefined, NOW)).toBeNull();
    expect(retryAfterMs("", NOW)).toBeNull();
    expect(retryAfterMs("-1", NOW)).toBeNull();
  });
});
