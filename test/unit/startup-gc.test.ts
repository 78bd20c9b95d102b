/**
 * server/startup-gc.ts: the memory-reducing GC runs on the first call only, reports what it
 * did, and leaves no `gc` on the process's global object.
 */
import { describe, expect, it } from "vitest";
import { startupGc } from "../../src/server/startup-gc.ts";

describe("startupGc", () => {
  it("collects on the first call, returns null on every later one, and exposes no global gc", () => {
    // Garbage for it to find: 200,000 objects built and dropped.
    let garbage: Array<{ i: number; s: string }> | null = Array.from({ length: 200_000 }, (_, i) => ({
      i,
      s: `x${i}`,
    }));
    expect(garbage).toHaveLength(200_000);
    garbage = null;
    const first = startupGc();
    expect(first).not.toBeNull();
    expect(first!.pauseMs).toBeGreaterThan(0);
    expect(first!.rssBeforeMiB).toBeGreaterThan(0);
    expect(first!.heapUsedAfterMiB).toBeLessThan(first!.heapUsedBeforeMiB);
    expect(startupGc()).toBeNull();
    expect(startupGc()).toBeNull();
    expect("gc" in globalThis).toBe(false);
  });
});
