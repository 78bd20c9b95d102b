/**
 * The demo feed on a bare machine: with its candles and its sample rows, every free endpoint
 * answers with data, and every sample row says plainly that it is sample data. A restart adds
 * no second copy of the history rows.
 */

import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemoFeed } from "../../src/market/demo-feed.ts";
import { collectStream, DATASETS } from "../../src/market-data/datasets.ts";
import { demoDataRows, startDemoData } from "../../src/market-data/demo-data.ts";
import { apiJson } from "../support/api-request.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let server: TestServer;
let apiKey: string;
const stops: Array<() => void> = [];
const logger = pino({ level: "silent" });

beforeAll(async () => {
  server = await startTestServer({ feed: true });
  stops.push(await startDemoFeed(server.feed!, server.clock, logger, 3_600_000));
  stops.push(await startDemoData(server.db.handle, server.clock, logger));
  ({ apiKey } = await server.account());
});
afterAll(async () => {
  for (const stop of stops) stop();
  await server?.close();
});

describe("demo feed", () => {
  it("its sample rows all pass the feeders' validation", async () => {
    const rows = demoDataRows(server.clock());
    for (const dataset of DATASETS) {
      const { summary } = await collectStream(dataset, rows[dataset] as never, server.clock());
      expect(summary.rejected, dataset).toBe(0);
    }
  });

  it("every free endpoint answers with data, and each sample row is labelled as sample data", async () => {
    const movers = await apiJson(server.baseUrl, "/api/v1/movers?tf=1h", apiKey);
    expect(movers.volume_leaders.map((r: { symbol: string }) => r.symbol).sort()).toEqual([
      "BNB",
      "BTC",
      "ETH",
      "SOL",
      "XRP",
    ]);
    expect(movers.gainers.length + movers.losers.length).toBeGreaterThan(0);

    const derivatives = await apiJson(server.baseUrl, "/api/v1/derivatives", apiKey);
    expect(derivatives.rows).toHaveLength(10);
    for (const row of derivatives.rows) expect(row.venue).toMatch(/DEMO.*sample data/);

    const news = await apiJson(server.baseUrl, "/api/v1/news", apiKey);
    expect(news.items).toHaveLength(5);
    for (const item of news.items) {
      expect(item.source).toBe("demo (sample data, not real news)");
      expect(item.title).toMatch(/^\[Sample\] /);
      expect(item.url).toMatch(/^https:\/\/example\.com\//);
    }

    const macro = await apiJson(server.baseUrl, "/api/v1/macro?limit=500", apiKey);
    expect(macro.points).toHaveLength(36);
    for (const point of macro.points) {
      expect(point.series).toMatch(/^DEMO .* \(sample\)$/);
      expect(point.source).toMatch(/sample data/);
    }

    const fundamentals = await apiJson(server.baseUrl, "/api/v1/fundamentals", apiKey);
    expect(fundamentals.rows.map((r: { rank: number }) => r.rank).sort()).toEqual([1, 2, 3, 4, 5]);
    for (const row of fundamentals.rows) expect(row.source).toMatch(/sample data/);
  });

  it("a restart stores no second copy of the news and macro history", async () => {
    stops.push(await startDemoData(server.db.handle, server.clock, logger));
    expect((await apiJson(server.baseUrl, "/api/v1/news?limit=100", apiKey)).items).toHaveLength(5);
    expect((await apiJson(server.baseUrl, "/api/v1/macro?limit=500", apiKey)).points).toHaveLength(36);
  });
});
