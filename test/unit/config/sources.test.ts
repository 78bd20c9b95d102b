import { describe, expect, it } from "vitest";
import { COINGECKO_IDS } from "../../../src/config/coingecko-ids.ts";
import { parseContextSourcesConfig } from "../../../src/config/sources.ts";

const FRED_KEY = "0123456789abcdef0123456789abcdef";

describe("parseContextSourcesConfig", () => {
  it(
    "defaults: no feeds, keyless CoinGecko on the public host, " + "the documented FRED series, 5 min / 10 min / daily",
    () => {
      const c = parseContextSourcesConfig({});
      expect(c.news).toEqual({ feeds: [], refreshMs: 300_000 });
      expect(c.fundamentals).toMatchObject({
        apiKey: null,
        plan: "public",
        apiBase: "https://api.coingecko.com/api/v3",
        refreshMs: 600_000,
        symbols: Object.keys(COINGECKO_IDS),
      });
      expect(c.macro).toEqual({
        apiKey: null,
        apiBase: "https://api.stlouisfed.org/fred",
        series: ["DTWEXBGS", "DFF", "DGS10", "CPIAUCSL"],
        refreshMs: 86_400_000,
        historyDays: 730,
      });
      expect(c.timeoutMs).toBe(20_000);
    },
  );

  it("reads lists (commas or spaces), keys and overrides", () => {
    const c = parseContextSourcesConfig({
      NEWS_FEEDS: " https://a.example/rss , https://b.example/feed.json\nhttps://a.example/rss ",
      NEWS_REFRESH: "600",
      COINGECKO_API_KEY: "CG-abcdefgh",
      COINGECKO_PLAN: "pro",
      COINGECKO_IDS: "GAS=gas,btc=bitcoin",
      FUNDAMENTALS_SYMBOLS: "btc, gas",
      FRED_API_KEY: FRED_KEY,
      MACRO_SERIES: "DGS10 UNRATE",
      MACRO_REFRESH: "3600",
    });
    expect(c.news).toEqual({ feeds: ["https://a.example/rss", "https://b.example/feed.json"], refreshMs: 600_000 });
    expect(c.fundamentals).toMatchObject({
      apiKey: "CG-abcdefgh",
      plan: "pro",
      apiBase: "https://pro-api.coingecko.com/api/v3",
      symbols: ["BTC", "GAS"],
    });
    expect(c.fundamentals.ids.GAS).toBe("gas");
    expect(c.macro).toMatchObject({ apiKey: FRED_KEY, series: ["DGS10", "UNRATE"], refreshMs: 3_600_000 });
  });

  it("a key alone means the demo plan, on the demo host", () => {
    expect(parseContextSourcesConfig({ COINGECKO_API_KEY: "CG-abcdefgh" }).fundamentals).toMatchObject({
      plan: "demo",
      apiBase: "https://api.coingecko.com/api/v3",
    });
  });

  it.each<[Record<string, string>, RegExp]>([
    [{ NEWS_FEEDS: "ftp://x.example/feed" }, /^NEWS_FEEDS must be an http\(s\) URL/],
    [{ NEWS_REFRESH: "60" }, /^NEWS_REFRESH must be at least 300/],
    [{ NEWS_REFRESH: "5m" }, /^NEWS_REFRESH must be a whole number of seconds/],
    [{ COINGECKO_PLAN: "pro" }, /COINGECKO_PLAN=pro needs COINGECKO_API_KEY/],
    [{ COINGECKO_PLAN: "enterprise" }, /^COINGECKO_PLAN must be public, demo or pro/],
    [
      {
        COINGECKO_API_KEY: "CG-abcdefgh",
        COINGECKO_PLAN: "pro",
        COINGECKO_API_BASE: "https://api.coingecko.com/api/v3",
      },
      /the demo host, but COINGECKO_PLAN is pro/,
    ],
    [
      { COINGECKO_API_KEY: "CG-abcdefgh", COINGECKO_API_BASE: "https://pro-api.coingecko.com/api/v3/" },
      /the pro host, but COINGECKO_PLAN is demo/,
    ],
    [{ COINGECKO_IDS: "GAS:gas" }, /^COINGECKO_IDS must be a list of CODE=coingecko-id pairs/],
    [{ FRED_API_KEY: "short" }, /^FRED_API_KEY must be 32 lower-case letters or digits/],
    [{ MACRO_SERIES: "dgs10" }, /^MACRO_SERIES must be a list of FRED series ids/],
    [{ SOURCE_TIMEOUT: "0" }, /^SOURCE_TIMEOUT must be at least 1/],
  ])("refuses %j", (env, message) => {
    expect(() => parseContextSourcesConfig(env)).toThrow(message);
  });
});
