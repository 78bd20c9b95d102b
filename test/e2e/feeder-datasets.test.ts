/**
 * `signals feed --datasets news,fundamentals,macro` end to end: the real feeder (startFeeder, as
 * `signals feed` runs it) with its context sources against real local fakes of a news
 * publisher, CoinGecko and FRED, pushing into a real server. The free endpoints answer what the
 * sources said; the feeder's /status and /metrics show each source's last success and last
 * error; the public /status page lists each dataset's newest row. Then the start errors.
 */
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseFeedConfig } from "../../src/config/feeder.ts";
import { type Feeder, startFeeder } from "../../src/feeder/feeder.ts";
import { parseContextSourcesConfig } from "../../src/feeder/sources/index.ts";
import { formatMyt } from "../../src/web/format.ts";
import { apiJson } from "../support/api-request.ts";
import { type CoinGeckoMarket, type FakeCoinGecko, startFakeCoinGecko } from "../support/fake-coingecko.ts";
import { type FakeFred, startFakeFred } from "../support/fake-fred.ts";
import { type FakeNews, rss, startFakeNews } from "../support/fake-news.ts";
import { childEnv, runCli } from "../support/processes.ts";
import { waitFor as pollUntil } from "../support/reliability.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const NOW = Date.parse("2026-11-15T04:00:00Z");
const CG_KEY = "CG-demo-key-for-tests";
const FRED_KEY = "abcdefghijklmnopqrstuvwxyz012345";
const NEWS_TIME = Date.parse("2026-11-15T02:30:00Z");
const CG_UPDATED = "2026-11-15T03:58:12.345Z";

const clock = createTestClock(NOW);
let server: TestServer;
let apiKey: string;
let news: FakeNews;
let coingecko: FakeCoinGecko;
let fred: FakeFred;
let feeder: Feeder;

const BTC: CoinGeckoMarket = {
  id: "bitcoin",
  symbol: "btc",
  name: "Bitcoin",
  current_price: 98_000,
  market_cap: 1.95e12,
  market_cap_rank: 1,
  fully_diluted_valuation: 2.07e12,
  circulating_supply: 19_790_000,
  total_supply: 19_790_000,
  max_supply: 21_000_000,
  ath: 126_080,
  ath_date: "2025-10-06T18:57:42.558Z",
  last_updated: CG_UPDATED,
};

/** Polls until `check` holds (test/support's waitFor), naming the sources' statuses when it times out. */
const waitFor = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = EVENT_WAIT_MS) =>
  pollUntil(check, timeoutMs, () => `${what}: ${JSON.stringify(feeder?.sources())}`, 20);

const status = (name: string) => feeder.sources().find((s) => s.name === name)!;

beforeAll(async () => {
  server = await startTestServer({ clock, env: { FREE_RATE_LIMIT: "100000" } });
  ({ apiKey } = await server.account());
  news = await startFakeNews();
  news.route("/wire.xml", {
    body: rss("Coin Wire", [
      `<item><guid>w-1</guid><title>Bitcoin tops ` +
        `$100k</title><link>https://news.example/w/1</link><pubDate>Sun, ` +
        `15 Nov 2026 02:30:00 GMT</pubDate></item>`,
    ]),
  });
  news.route("/broken.xml", { status: 500, body: "upstream exploded" });
  coingecko = await startFakeCoinGecko("demo", CG_KEY, [BTC]);
  fred = await startFakeFred(
    FRED_KEY,
    { DGS10: { unitsShort: "%", observations: { "2026-11-10": "4.10", "2026-11-12": "4.15" } } },
    "2026-11-15",
  );
  const config = parseFeedConfig(
    {
      FEED_SERVER: server.internalUrl,
      INTERNAL_TOKEN,
      FEED_METRICS_PORT: "0",
      FEED_DATASETS: "candles",
      LOG_LEVEL: "silent",
    },
    // The flag wins over FEED_DATASETS; no exchange dataset, so no exchange is needed.
    ["--datasets", "news,fundamentals,macro"],
  );
  const contextConfig = parseContextSourcesConfig({
    NEWS_FEEDS: `${news.baseUrl}/wire.xml,${news.baseUrl}/broken.xml`,
    COINGECKO_API_KEY: CG_KEY,
    COINGECKO_PLAN: "demo",
    COINGECKO_API_BASE: `${coingecko.baseUrl}/api/v3`,
    FUNDAMENTALS_SYMBOLS: "BTC",
    FRED_API_KEY: FRED_KEY,
    FRED_API_BASE: `${fred.baseUrl}/fred`,
    MACRO_SERIES: "DGS10",
    // No timeout is under test here (every fake answers at once): the longest one, so that a loaded machine's
    // slowness is never mistaken for a feed that does not answer (the broken feed's error must be its 500).
    SOURCE_TIMEOUT: "300",
  });
  feeder = await startFeeder({
    config,
    contextConfig,
    contextTickMs: 20,
    token: INTERNAL_TOKEN,
    logger: pino({ level: "silent" }),
    now: clock,
  });
  await waitFor(
    "every source's first round",
    () =>
      ["news", "fundamentals", "macro"].every((n) => status(n)?.lastSuccessMs !== null) &&
      status("news").lastErrorMs !== null,
  );
});

afterAll(async () => {
  await feeder?.stop();
  await Promise.all([news?.close(), coingecko?.close(), fred?.close()]);
  await server?.close();
});

describe("signals feed --datasets news,fundamentals,macro", () => {
  it("the free endpoints answer what the sources said", async () => {
    expect((await apiJson(server.baseUrl, "/api/v1/news?limit=100", apiKey)).items).toEqual([
      expect.objectContaining({
        title: "Bitcoin tops $100k",
        source: "Coin Wire",
        url: "https://news.example/w/1",
        time: NEWS_TIME,
        coins: ["BTC"],
        updated_at: NOW,
      }),
    ]);
    expect((await apiJson(server.baseUrl, "/api/v1/fundamentals", apiKey)).rows).toEqual([
      expect.objectContaining({
        symbol: "BTC",
        circulating_supply: 19_790_000,
        max_supply: 21_000_000,
        market_cap_usd: 1.95e12,
        rank: 1,
        source: "CoinGecko",
        time: Date.parse(CG_UPDATED),
        updated_at: NOW,
      }),
    ]);
    expect((await apiJson(server.baseUrl, "/api/v1/macro?limit=100", apiKey)).points).toEqual([
      expect.objectContaining({ series: "DGS10", time: Date.parse("2026-11-12T00:00:00Z"), value: 4.15, unit: "%" }),
      expect.objectContaining({ series: "DGS10", time: Date.parse("2026-11-10T00:00:00Z"), value: 4.1, unit: "%" }),
    ]);
  });

  it(
    "the feeder's /status answers each source's last success " + "and last error; a failing feed shows its error",
    async () => {
      const res = await fetch(`http://127.0.0.1:${feeder.metricsPort}/status`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json");
      const body = (await res.json()) as {
        coins: unknown[];
        sources: Array<{
          name: string;
          lastSuccessMs: number | null;
          lastError: string | null;
          lastErrorMs: number | null;
        }>;
      };
      expect(body.coins).toEqual(feeder.coins());
      expect(body.sources.map((s) => s.name)).toEqual(["news", "fundamentals", "macro"]);
      expect(body.sources).toEqual(feeder.sources());
      for (const s of body.sources) expect(s.lastSuccessMs).toBe(NOW);
      const newsStatus = body.sources.find((s) => s.name === "news")!;
      expect(newsStatus.lastError).toMatch(/\/broken\.xml: .*500/);
      expect(newsStatus.lastErrorMs).toBe(NOW);
      expect(body.sources.find((s) => s.name === "macro")).toMatchObject({ lastError: null, lastErrorMs: null });
      expect(JSON.stringify(body)).not.toContain(FRED_KEY);
    },
  );

  it("the feeder's /metrics shows each source's last success and its errors", async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${feeder.metricsPort}/metrics`)).text();
    for (const name of ["news", "fundamentals", "macro"])
      expect(metrics).toContain(`feed_source_last_success_seconds{source="${name}"} ${NOW / 1000}`);
    expect(metrics).toMatch(/feed_source_errors_total\{source="news"\} [1-9]/);
    expect(metrics).toMatch(/feed_source_errors_total\{source="macro"\} 0\b/);
  });

  it("the public /status page lists each free dataset with its newest stored row", async () => {
    const res = await fetch(`${server.baseUrl}/status`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("<h2>Context data</h2>");
    const row = (dataset: string) =>
      page
        .match(
          new RegExp(`<tr data-dataset="${dataset}"><th scope="row">${dataset}</th><td>([^<]*)</td><td>([^<]*)</td>`),
        )
        ?.slice(1);
    expect(row("news")).toEqual([formatMyt(NEWS_TIME), formatMyt(NOW)]);
    expect(row("fundamentals")).toEqual([formatMyt(Date.parse(CG_UPDATED)), formatMyt(NOW)]);
    expect(row("macro")).toEqual([formatMyt(Date.parse("2026-11-12T00:00:00Z")), formatMyt(NOW)]);
    // Nothing fed these here: listed, with no row yet.
    expect(row("derivatives")).toEqual(["none", "none"]);
    expect(row("movers")).toEqual(["none", "none"]);
  });
});

describe("signals feed --datasets start errors", () => {
  it.each([
    [["--datasets", "news"], {}, "signals feed: the news dataset needs NEWS_FEEDS (RSS, Atom or JSON Feed URLs)"],
    [
      ["--datasets", "macro,candles"],
      {},
      "signals feed: the macro dataset needs FRED_API_KEY (free at https://fred.stlouisfed.org/docs/api/api_key.html)",
    ],
    [
      [],
      { FEED_DATASETS: "news,weather" },
      "signals feed: --datasets takes candles, derivatives, news, fundamentals, macro",
    ],
    [
      ["--datasets", "fundamentals"],
      { COINGECKO_PLAN: "pro" },
      "signals feed: COINGECKO_PLAN=pro needs COINGECKO_API_KEY",
    ],
  ])("%j %j prints one line and exits 2", async (args, env, line) => {
    const res = await runCli(
      ["feed", ...args],
      childEnv({
        INTERNAL_TOKEN,
        NEWS_FEEDS: "",
        FRED_API_KEY: "",
        COINGECKO_API_KEY: "",
        COINGECKO_PLAN: "",
        FEED_DATASETS: "",
        ...env,
      }),
    );
    expect(res.stderr.trim()).toBe(line);
    expect(res.code).toBe(2);
  });
});
