/**
 * The feeder's context sources end to end: the real news, fundamentals and macro sources run
 * against real local fakes of the publishers, CoinGecko and FRED (fixtures written from their
 * documented formats), push through DataIngestService on a real server's internal listener,
 * and the free endpoints then answer exactly what the sources said: duplicates, malformed
 * items, a 304, a 500 and a slow feed; a 429 and an ambiguous ticker; a revised observation.
 */

import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerClient, type ServerClient } from "../../src/feeder/server-client.ts";
import { type ContextSources, parseContextSourcesConfig, startContextSources } from "../../src/feeder/sources/index.ts";
import { newsId } from "../../src/feeder/sources/news.ts";
import { apiJson } from "../support/api-request.ts";
import { type CoinGeckoMarket, type FakeCoinGecko, startFakeCoinGecko } from "../support/fake-coingecko.ts";
import { type FakeFred, startFakeFred } from "../support/fake-fred.ts";
import { atom, type FakeNews, jsonFeed, rss, startFakeNews } from "../support/fake-news.ts";
import { waitFor as pollUntil } from "../support/reliability.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const NOW = Date.parse("2026-11-15T04:00:00Z");
const MIN = 60_000;
const DAY = 86_400_000;
const CG_KEY = "CG-demo-key-for-tests";
const FRED_KEY = "abcdefghijklmnopqrstuvwxyz012345";

const clock = createTestClock(NOW);
let server: TestServer;
let apiKey: string;
let news: FakeNews;
let coingecko: FakeCoinGecko;
let fred: FakeFred;
let sources: ContextSources;
let serverClient: ServerClient;
const registry = new Registry();
const logLines: Array<Record<string, unknown>> = [];

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------
const A1 = { link: "https://news.example/a/1", title: "Bitcoin tops $100k as ETF inflows grow" };
const A5 = {
  link: "https://news.example/a/5",
  title: "Harmony ONE upgrade lands; GAS fees fall on the BEST day for $LINK",
};
const FEED_A = rss("Coin Wire", [
  // +0800 offset: stored as 2026-11-14T19:00:00Z.
  `<item><guid isPermaLink="false">a-1</guid><title>${A1.title}</title><link>${A1.link}</link>\
<pubDate>Sun, 15 Nov 2026 03:00:00 +0800</pubDate>\
<description>An article body that must not be stored.</description></item>`,
  `<item><guid isPermaLink="false">a-1</guid><title>${A1.title}</title><link>${A1.link}</link>\
<pubDate>Sun, 15 Nov 2026 03:00:00 +0800</pubDate></item>`,
  `<item><title>No link and no guid</title><pubDate>Sat, 14 Nov 2026 21:00:00 GMT</pubDate></item>`,
  `<item><guid>a-4</guid><title>Unreadable ` +
    `date</title><link>https://news.example/a/4</link><pubDate>yesterday-ish</pubDate></item>`,
  `<item><guid>a-6</guid><title></title><link>https://news.example/a/6</link><pubDate>Sat, ` +
    `14 Nov 2026 21:30:00 GMT</pubDate></item>`,
  `<item><guid>a-5</guid><title>${A5.title.replace("&", "&amp;")}</title><link>${A5.link}</link>\
<pubDate>Sat, 14 Nov 2026 22:30:00 GMT</pubDate></item>`,
]);
const B1 = { link: "https://news.example/b/1", title: "Ethereum and Solana developers meet in Lisbon" };
const FEED_B = atom("Chain Journal", [
  `<entry><id>tag:news.example,2026:b-1</id><title>${B1.title}</title><link ` +
    `href="${B1.link}"/><published>2026-11-15T01:00:00Z</published>\
<updated>2026-11-15T02:00:00Z</updated><summary>Body.</summary></entry>`,
  // The same article as feed A's first item (same link): stored once.
  `<entry><id>tag:news.example,2026:a-1-copy</id><title>${A1.title}</title><link ` +
    `href="${A1.link}"/><published>2026-11-14T19:00:00Z</published><updated>2026-11-14T19:00:00Z</updated></entry>`,
]);
const C1 = { link: "https://news.example/c/1", title: "Bitcoin Cash and Litecoin rally while XRP Ledger upgrades" };
const FEED_C = jsonFeed("Daily Ledger", [
  // -05:00 offset: stored as 2026-11-15T01:30:00Z.
  { id: "c-1", url: C1.link, title: C1.title, content_text: "Body.", date_published: "2026-11-14T20:30:00-05:00" },
]);
const D1 = { link: "https://news.example/d/1", title: "TRON and Cardano headline after the outage" };
const FEED_D = rss("Recovering Wire", [
  `<item><guid>d-1</guid><title>${D1.title}</title><link>${D1.link}</link>\
<pubDate>Sun, 15 Nov 2026 03:30:00 GMT</pubDate></item>`,
]);

const item = (x: { link: string; title: string }, time: string, source: string, coins: string[], updatedAt = NOW) => ({
  id: newsId(x.link),
  time: Date.parse(time),
  title: x.title,
  source,
  url: x.link,
  coins,
  updated_at: updatedAt,
});

const market = (m: Partial<CoinGeckoMarket> & Pick<CoinGeckoMarket, "id" | "symbol" | "name">): CoinGeckoMarket => ({
  current_price: 1,
  market_cap: null,
  market_cap_rank: null,
  fully_diluted_valuation: null,
  circulating_supply: null,
  total_supply: null,
  max_supply: null,
  ath: null,
  ath_date: null,
  last_updated: "2026-11-15T03:58:12.345Z",
  ...m,
});
const MARKETS: CoinGeckoMarket[] = [
  market({
    id: "bitcoin",
    symbol: "btc",
    name: "Bitcoin",
    market_cap: 1.95e12,
    market_cap_rank: 1,
    fully_diluted_valuation: 2.07e12,
    circulating_supply: 19_790_000,
    total_supply: 19_790_000,
    max_supply: 21_000_000,
    ath: 126_080,
    ath_date: "2025-10-06T18:57:42.558Z",
  }),
  market({
    id: "ethereum",
    symbol: "eth",
    name: "Ethereum",
    market_cap: 4.4e11,
    market_cap_rank: 2,
    fully_diluted_valuation: 4.4e11,
    circulating_supply: 120_700_000.5,
    total_supply: 120_700_000.5,
    ath: 4_946.05,
    ath_date: "2025-08-24T19:21:03.333Z",
    last_updated: null,
  }),
  // Two coins share the ticker GAS: the better-ranked one (Neo's GAS) wins.
  market({
    id: "gas",
    symbol: "gas",
    name: "Gas",
    market_cap: 1.5e8,
    market_cap_rank: 480,
    circulating_supply: 65_000_000,
    total_supply: 65_000_000,
    ath: 91.5,
    ath_date: "2018-01-15T00:00:00.000Z",
  }),
  market({
    id: "gas-dao",
    symbol: "gas",
    name: "Gas DAO",
    market_cap: 2e6,
    market_cap_rank: 2900,
    circulating_supply: 1e12,
    total_supply: 1e12,
  }),
  market({
    id: "solana",
    symbol: "sol",
    name: "Solana",
    market_cap: 9e10,
    market_cap_rank: 5,
    circulating_supply: 5e8,
  }),
];

/** Polls until `check` holds (test/support's waitFor), naming the sources' statuses when it times out. */
const waitFor = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = EVENT_WAIT_MS) =>
  pollUntil(check, timeoutMs, () => `${what}: ${JSON.stringify(sources?.statuses())}`, 20);

const status = (name: string) => sources.statuses().find((s) => s.name === name)!;

beforeAll(async () => {
  server = await startTestServer({ clock, env: { FREE_RATE_LIMIT: "100000" } });
  ({ apiKey } = await server.account());
  news = await startFakeNews();
  news.route("/a.xml", { body: FEED_A, etag: '"a-v1"', lastModified: "Sun, 15 Nov 2026 03:59:00 GMT" });
  news.route("/b.atom", {
    body: FEED_B,
    contentType: "application/atom+xml",
    lastModified: "Sun, 15 Nov 2026 02:00:00 GMT",
  });
  news.route("/c.json", { body: FEED_C, contentType: "application/feed+json" });
  news.route("/broken.xml", { status: 500, body: "upstream exploded" });
  // Answers long after SOURCE_TIMEOUT (the abort closes the connection, which drops the answer):
  // the timeout decides, not how fast this machine happens to be.
  news.route("/slow.xml", { body: FEED_D, delayMs: 120_000 });
  coingecko = await startFakeCoinGecko("demo", CG_KEY, MARKETS);
  coingecko.rateLimitNext(1, 2);
  fred = await startFakeFred(
    FRED_KEY,
    {
      DGS10: {
        unitsShort: "%",
        observations: { "2026-11-10": "4.10", "2026-11-11": ".", "2026-11-12": "4.15", "2024-01-02": "3.95" },
      },
      CPIAUCSL: { unitsShort: "Index 1982-1984=100", observations: { "2026-09-01": "324.0", "2026-10-01": "325.1" } },
    },
    "2026-11-15",
  );
  const config = parseContextSourcesConfig({
    NEWS_FEEDS: ["/a.xml", "/b.atom", "/c.json", "/broken.xml", "/slow.xml"].map((p) => news.baseUrl + p).join(","),
    COINGECKO_API_KEY: CG_KEY,
    COINGECKO_PLAN: "demo",
    COINGECKO_API_BASE: `${coingecko.baseUrl}/api/v3`,
    FUNDAMENTALS_SYMBOLS: "BTC,ETH,GAS",
    FRED_API_KEY: FRED_KEY,
    FRED_API_BASE: `${fred.baseUrl}/fred`,
    MACRO_SERIES: "DGS10,CPIAUCSL",
    MACRO_HISTORY_DAYS: "365",
    // Long enough for the fast fakes on a loaded machine; the slow feed never answers within it.
    SOURCE_TIMEOUT: "5",
  });
  const logger = pino(
    { level: "info" },
    { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  sources = startContextSources({
    datasets: ["news", "fundamentals", "macro"],
    config,
    logger,
    registry,
    ingest: (serverClient = createServerClient(server.internalUrl, INTERNAL_TOKEN, "context-sources-test")).dataIngest,
    clock,
    tickMs: 20,
  });
  // Every source's first round ends at NOW (the slow feed's timeout included) before any test moves the clock.
  await waitFor(
    "the first round of every source",
    () =>
      status("news").lastSuccessMs !== null &&
      status("macro").lastSuccessMs !== null &&
      status("fundamentals").lastErrorMs !== null,
  );
});

afterAll(async () => {
  await sources?.stop();
  serverClient?.close();
  await Promise.all([news?.close(), coingecko?.close(), fred?.close()]);
  await server?.close();
});

describe("fundamentals from CoinGecko /coins/markets", () => {
  it(
    "sends the demo key in the demo header, waits out a 429, resolves an ambiguous " +
      "ticker by rank and reports it; the endpoint answers CoinGecko's figures",
    async () => {
      await waitFor("the 429", () => status("fundamentals").lastErrorMs !== null);
      expect(status("fundamentals").lastError).toMatch(/^CoinGecko: HTTP 429: 429 You've exceeded the Rate Limit/);
      const firstCalls = coingecko.requests.filter((r) => r.path.endsWith("/coins/markets")).length;
      expect(firstCalls).toBe(1);
      // Back-off (60 s) is longer than Retry-After (2 s): nothing is asked before it.
      clock.advance(30_000);
      await new Promise((r) => setTimeout(r, 150));
      expect(coingecko.requests.filter((r) => r.path.endsWith("/coins/markets")).length).toBe(1);
      clock.advance(31_000);
      await waitFor("fundamentals stored", () => status("fundamentals").lastSuccessMs !== null);
      const at = clock();
      for (const r of coingecko.requests) {
        expect(r.headers["x-cg-demo-api-key"]).toBe(CG_KEY);
        expect(r.headers["x-cg-pro-api-key"]).toBeUndefined();
      }
      const call = coingecko.requests.filter((r) => r.path.endsWith("/coins/markets")).at(-1)!;
      expect(call.query.get("vs_currency")).toBe("usd");
      expect(call.query.get("ids")!.split(",").sort()).toEqual(["bitcoin", "ethereum", "gas", "gas-dao"]);
      const body = await apiJson(server.baseUrl, "/api/v1/fundamentals", apiKey);
      const lastUpdated = Date.parse("2026-11-15T03:58:12.345Z");
      expect(body.rows).toEqual([
        {
          symbol: "BTC",
          circulating_supply: 19_790_000,
          max_supply: 21_000_000,
          total_supply: 19_790_000,
          market_cap_usd: 1.95e12,
          fully_diluted_valuation_usd: 2.07e12,
          rank: 1,
          ath_usd: 126_080,
          ath_time: Date.parse("2025-10-06T18:57:42.558Z"),
          source: "CoinGecko",
          time: lastUpdated,
          updated_at: at,
        },
        // No last_updated: the time of the call.
        {
          symbol: "ETH",
          circulating_supply: 120_700_000.5,
          max_supply: null,
          total_supply: 120_700_000.5,
          market_cap_usd: 4.4e11,
          fully_diluted_valuation_usd: 4.4e11,
          rank: 2,
          ath_usd: 4_946.05,
          ath_time: Date.parse("2025-08-24T19:21:03.333Z"),
          source: "CoinGecko",
          time: at,
          updated_at: at,
        },
        {
          symbol: "GAS",
          circulating_supply: 65_000_000,
          max_supply: null,
          total_supply: 65_000_000,
          market_cap_usd: 1.5e8,
          fully_diluted_valuation_usd: null,
          rank: 480,
          ath_usd: 91.5,
          ath_time: Date.parse("2018-01-15T00:00:00.000Z"),
          source: "CoinGecko",
          time: lastUpdated,
          updated_at: at,
        },
      ]);
      expect(logLines.find((l) => l.msg?.toString().startsWith("ambiguous ticker"))).toMatchObject({
        symbol: "GAS",
        candidates: ["gas", "gas-dao"],
        chosen: "gas",
      });
    },
  );
});

describe("news from RSS, Atom and JSON feeds", () => {
  it(
    "stores each article once (duplicates within and across feeds dropped), leaves malformed " +
      "items out, normalises times to UTC and tags coins; a 500 and a slow feed stop nothing",
    async () => {
      await waitFor(
        "the first news round",
        () =>
          status("news").lastSuccessMs !== null &&
          news.served("/slow.xml").length > 0 &&
          status("news").lastErrorMs !== null,
      );
      // The slow feed's timeout is recorded as its own error, after the others were stored.
      await waitFor(
        "both failing feeds to be reported",
        async () =>
          (await registry.getSingleMetric("feed_source_errors_total")!.get()).values.find(
            (v) => v.labels.source === "news",
          )?.value === 2,
      );
      const body = await apiJson(server.baseUrl, "/api/v1/news?limit=100", apiKey);
      expect(body.items).toEqual([
        item(C1, "2026-11-15T01:30:00Z", "Daily Ledger", ["BCH", "LTC", "XRP"]),
        item(B1, "2026-11-15T01:00:00Z", "Chain Journal", ["ETH", "SOL"]),
        item(A5, "2026-11-14T22:30:00Z", "Coin Wire", ["ONE", "LINK"]),
        item(A1, "2026-11-14T19:00:00Z", "Coin Wire", ["BTC"]),
      ]);
      expect(JSON.stringify(body)).not.toContain("must not be stored");
      expect(status("news").lastError).toMatch(/\/(broken|slow)\.xml: /);
      expect(logLines.some((l) => l.msg === "news feed failed" && String(l.err).includes("HTTP 500"))).toBe(true);
      expect(
        logLines.some((l) => l.msg === "news feed failed" && String(l.err).includes("no answer within 5000 ms")),
      ).toBe(true);
    },
  );

  it(
    "polls politely: nothing before 5 minutes, then a conditional GET answered " +
      "304; a failed feed is retried after its back-off and its items arrive",
    async () => {
      // The first round ran at NOW; the fundamentals test has moved the clock on by 61 s since.
      const before = news.requests.length;
      clock.set(NOW + 4 * MIN);
      await new Promise((r) => setTimeout(r, 200));
      expect(news.requests.length).toBe(before);
      news.route("/broken.xml", { body: FEED_D, etag: '"d-v1"' });
      news.route("/slow.xml", { body: FEED_D });
      // Five minutes after the first round: feeds A, B, C are due; the failed ones wait 5 min after their failure too.
      clock.set(NOW + 5 * MIN + 1_000);
      await waitFor(
        "feed A's 304 and the recovered feed",
        () => news.served("/a.xml").includes(304) && news.served("/broken.xml").includes(200),
      );
      const conditional = news.requests.filter((r) => r.path === "/a.xml").at(-1)!;
      expect(conditional.headers["if-none-match"]).toBe('"a-v1"');
      expect(conditional.headers["if-modified-since"]).toBe("Sun, 15 Nov 2026 03:59:00 GMT");
      expect(news.requests.filter((r) => r.path === "/b.atom").at(-1)!.headers["if-modified-since"]).toBe(
        "Sun, 15 Nov 2026 02:00:00 GMT",
      );
      const at = clock();
      await waitFor(
        "the recovered feed's item",
        async () => (await apiJson(server.baseUrl, "/api/v1/news?limit=100", apiKey)).items.length === 5,
      );
      const body = await apiJson(server.baseUrl, "/api/v1/news?limit=100", apiKey);
      // The recovered feed and the slow one (now fast) carry the same article: one row.
      expect(body.items[0]).toEqual(item(D1, "2026-11-15T03:30:00Z", "Recovering Wire", ["TRX", "ADA"], at));
      expect(body.items.slice(1).map((i: { updated_at: number }) => i.updated_at)).toEqual([NOW, NOW, NOW, NOW]);
    },
  );
});

describe("macro series from FRED", () => {
  it(
    "stores observations by date (missing '.' values skipped) with " +
      "the series' unit, and applies a revision FRED publishes later",
    async () => {
      await waitFor("macro stored", () => status("macro").lastSuccessMs !== null);
      const first = await apiJson(server.baseUrl, "/api/v1/macro?limit=500", apiKey);
      const point = (series: string, date: string, value: number, unit: string, updatedAt: number) => ({
        series,
        time: Date.parse(`${date}T00:00:00Z`),
        value,
        unit,
        source: "FRED, Federal Reserve Bank of St. Louis",
        updated_at: updatedAt,
      });
      const t0 = first.points[0].updated_at as number;
      expect(first.points).toEqual([
        point("DGS10", "2026-11-12", 4.15, "%", t0),
        point("DGS10", "2026-11-10", 4.1, "%", t0),
        point("CPIAUCSL", "2026-10-01", 325.1, "Index 1982-1984=100", t0),
        point("CPIAUCSL", "2026-09-01", 324, "Index 1982-1984=100", t0),
      ]);
      const obs = fred.requests.find((r) => r.path === "/fred/series/observations")!;
      expect(obs.query.get("file_type")).toBe("json");
      // MACRO_HISTORY_DAYS=365: the 2024 observation is outside the window.
      expect(obs.query.get("observation_start")).toBe(new Date(t0 - 365 * DAY).toISOString().slice(0, 10));
      // FRED revises September's CPI and publishes November's 10-year yield; a day later the source reads them.
      fred.series.CPIAUCSL!.observations["2026-09-01"] = "324.4";
      fred.series.DGS10!.observations["2026-11-13"] = "4.2";
      fred.setToday("2026-11-16");
      clock.advance(DAY);
      const t1 = clock();
      await waitFor("the revision", async () =>
        (await apiJson(server.baseUrl, "/api/v1/macro?series=CPIAUCSL&limit=500", apiKey)).points.some(
          (p: { value: number }) => p.value === 324.4,
        ),
      );
      expect((await apiJson(server.baseUrl, "/api/v1/macro?limit=500", apiKey)).points).toEqual([
        point("DGS10", "2026-11-13", 4.2, "%", t1),
        point("DGS10", "2026-11-12", 4.15, "%", t0),
        point("DGS10", "2026-11-10", 4.1, "%", t0),
        point("CPIAUCSL", "2026-10-01", 325.1, "Index 1982-1984=100", t0),
        point("CPIAUCSL", "2026-09-01", 324.4, "Index 1982-1984=100", t1),
      ]);
    },
  );
});

describe("status and metrics", () => {
  it("each source reports its last success and errors in statuses() and on the registry", async () => {
    const metrics = await registry.metrics();
    for (const s of sources.statuses()) {
      expect(s.lastSuccessMs).not.toBeNull();
      expect(metrics).toContain(`feed_source_last_success_seconds{source="${s.name}"} ${s.lastSuccessMs! / 1000}`);
    }
    expect(sources.statuses().map((s) => s.name)).toEqual(["news", "fundamentals", "macro"]);
    expect(metrics).toMatch(/feed_source_errors_total\{source="fundamentals"\} 1\b/);
    expect(metrics).toMatch(/feed_source_errors_total\{source="macro"\} 0\b/);
    // No key ever reaches a status or a log line.
    expect(JSON.stringify([sources.statuses(), logLines])).not.toContain(FRED_KEY);
    expect(JSON.stringify([sources.statuses(), logLines])).not.toContain(CG_KEY);
  });
});
