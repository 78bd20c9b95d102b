/**
 * ChartDataCache keeps at most its bound of series (CHART_SERIES_KEPT by default), dropping the
 * least recently viewed first; a kept series is served without a computation, a dropped one is
 * computed again at its next view. Before, every series anyone viewed stayed in memory.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { coins } from "../../src/db/schema.ts";
import { CHART_SERIES_KEPT, ChartDataCache } from "../../src/track-record/chart-data.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const SYMBOLS = ["AAA", "BBB", "CCC", "DDD", "EEE"];

describe("the chart data cache's bound", () => {
  let db: TestDb;

  beforeAll(async () => {
    db = await createTestDb(4);
    await db.handle.db
      .insert(coins)
      .values(SYMBOLS.map((symbol) => ({ symbol, baseTf: "1h", lastUpdateAt: new Date(0), demo: false })));
  });

  afterAll(async () => {
    await db?.drop();
  });

  it("keeps the 3 series viewed last, of 5, and computes a dropped one again", async () => {
    const computed: string[] = [];
    const cache = new ChartDataCache(db.handle, (symbol, tf) => computed.push(`${symbol}/${tf}`), 3);
    const view = async (symbol: string) => {
      const data = await cache.get(symbol, "1h");
      expect(data?.symbol).toBe(symbol);
      expect(cache.size).toBeLessThanOrEqual(3);
    };
    for (const symbol of ["AAA", "BBB", "CCC"]) await view(symbol);
    expect(computed).toEqual(["AAA/1h", "BBB/1h", "CCC/1h"]);
    await view("AAA"); // kept, and now the most recently viewed
    expect(computed).toHaveLength(3);
    await view("DDD"); // drops BBB, the least recently viewed
    await view("EEE"); // drops CCC
    expect(cache.size).toBe(3);
    await view("AAA");
    expect(computed).toHaveLength(5);
    await view("BBB");
    expect(computed).toEqual(["AAA/1h", "BBB/1h", "CCC/1h", "DDD/1h", "EEE/1h", "BBB/1h"]);
  });

  it("keeps CHART_SERIES_KEPT series unless told otherwise", async () => {
    const more = Array.from(
      { length: CHART_SERIES_KEPT + 1 - SYMBOLS.length },
      (_, i) => `Z${String(i).padStart(3, "0")}`,
    );
    await db.handle.db
      .insert(coins)
      .values(more.map((symbol) => ({ symbol, baseTf: "1h", lastUpdateAt: new Date(0), demo: false })));
    const cache = new ChartDataCache(db.handle);
    for (const symbol of [...SYMBOLS, ...more]) await cache.get(symbol, "1h");
    expect(cache.size).toBe(CHART_SERIES_KEPT);
  });
});
