/** The state the /status page shows for a coin's feed: live, backfilling or stale. */
import { describe, expect, it } from "vitest";
import { feedState } from "../../../src/web/status-page.ts";

describe("feedState (the /status page)", () => {
  const H = 3_600_000;
  const now = Date.UTC(2026, 10, 20, 12, 0, 30);
  it("live when updates arrive and the last closed candle is the one before the forming one", () => {
    expect(feedState(now, now - 1_000, Date.UTC(2026, 10, 20, 11), H, 600_000)).toBe("live");
  });
  it("backfilling when updates arrive but the history is more than a candle behind", () => {
    expect(feedState(now, now - 1_000, Date.UTC(2026, 10, 20, 8), H, 600_000)).toBe("backfilling");
    expect(feedState(now, now - 1_000, null, H, 600_000)).toBe("backfilling");
  });
  it("stale when nothing arrived for STALE_AFTER", () => {
    expect(feedState(now, now - 600_001, Date.UTC(2026, 10, 20, 11), H, 600_000)).toBe("stale");
  });
});
