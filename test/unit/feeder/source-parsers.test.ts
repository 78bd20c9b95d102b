import { describe, expect, it } from "vitest";
import { fundamentalsRow } from "../../../src/feeder/sources/fundamentals.ts";
import { readBody } from "../../../src/feeder/sources/http-get.ts";
import { macroRows } from "../../../src/feeder/sources/macro.ts";
import { newsId, parseFeed } from "../../../src/feeder/sources/news.ts";
import { backoffMs, retryAfterMs } from "../../../src/retry.ts";

const NOW = Date.parse("2026-11-15T04:00:00Z");

describe("parseFeed", () => {
  it(
    "reads RSS items as title, source, link, UTC time and coins; " +
      "items without a title, link or date are counted, not kept",
    () => {
      const xml = `<?xml version="1.0"?><rss version="2.0"><channel><title>  Coin   Wire </title>
      <item><title>Solana &amp; Cardano up</title><link>https://n.example/1?utm_source=rss</link><pubDate>Sun, 15 Nov \
2026 03:00:00 +0800</pubDate><description>body</description></item>
      <item><title>No date</title><link>https://n.example/2</link></item>
      <item><title>Bad link</title><link>javascript:alert(1)</link><pubDate>Sun, 15 Nov 2026 03:00:00 \
GMT</pubDate></item>
      </channel></rss>`;
      const { items, malformed } = parseFeed(xml, "application/rss+xml", "https://n.example/rss");
      expect(malformed).toBe(2);
      expect(items).toEqual([
        {
          id: newsId(items[0]!.url),
          time: Date.parse("2026-11-14T19:00:00Z"),
          title: "Solana & Cardano up",
          source: "Coin Wire",
          url: items[0]!.url,
          coins: ["SOL", "ADA"],
        },
      ]);
      expect(items[0]!.url.startsWith("https://n.example/1")).toBe(true);
    },
  );

  it("falls back to the feed's host name as source and shortens titles over 500 characters", () => {
    const body = JSON.stringify({
      version: "https://jsonfeed.org/version/1.1",
      title: "",
      items: [{ id: "1", url: "https://j.example/a", title: "x".repeat(600), date_published: "2026-11-15T00:00:00Z" }],
    });
    const { items } = parseFeed(body, "application/feed+json", "https://j.example/feed.json");
    expect(items[0]!.source).toBe("j.example");
    expect(items[0]!.title).toHaveLength(500);
  });

  it("throws on a body that is no feed", () => {
    expect(() => parseFeed("<html><body>hello</body></html>", "text/html", "https://x.example/")).toThrow();
  });
});

describe("fundamentalsRow", () => {
  const base = {
    id: "bitcoin",
    symbol: "btc",
    market_cap: 1e12,
    market_cap_rank: 1,
    fully_diluted_valuation: 1.1e12,
    circulating_supply: 19e6,
    total_supply: 19e6,
    max_supply: 21e6,
    ath: 126_000,
    ath_date: "2025-10-06T18:57:42.558Z",
    last_updated: "2026-11-15T03:59:00.000Z",
  };
  it("maps CoinGecko's fields; a last_updated ahead of our clock is capped to it", () => {
    expect(fundamentalsRow("BTC", base, NOW)).toEqual({
      symbol: "BTC",
      time: BigInt(Date.parse("2026-11-15T03:59:00.000Z")),
      circulatingSupply: 19e6,
      maxSupply: 21e6,
      marketCapUsd: 1e12,
      rank: 1,
      source: "CoinGecko",
      totalSupply: 19e6,
      fullyDilutedValuationUsd: 1.1e12,
      athUsd: 126_000,
      athTime: BigInt(Date.parse("2025-10-06T18:57:42.558Z")),
    });
    expect(fundamentalsRow("BTC", { ...base, last_updated: "2026-11-15T05:00:00Z" }, NOW)!.time).toBe(BigInt(NOW));
  });
  it("leaves out a coin without circulating supply or market cap", () => {
    expect(fundamentalsRow("BTC", { ...base, circulating_supply: null }, NOW)).toBeNull();
    expect(fundamentalsRow("BTC", { ...base, market_cap: null }, NOW)).toBeNull();
  });
});

describe("macroRows", () => {
  it("turns FRED observations into points at 00:00 UTC and skips '.' and unreadable values", () => {
    const rows = macroRows("DFF", "%", {
      observations: [
        { date: "2026-11-12", value: "3.88" },
        { date: "2026-11-13", value: "." },
        { date: "2026-11-14", value: "n/a" },
        { date: "bad", value: "1" },
      ],
    });
    expect(rows).toEqual([
      {
        series: "DFF",
        time: BigInt(Date.parse("2026-11-12T00:00:00Z")),
        value: 3.88,
        unit: "%",
        source: "FRED, Federal Reserve Bank of St. Louis",
      },
    ]);
  });
});

describe("back-off and Retry-After", () => {
  it("doubles from the base up to the cap", () => {
    expect([1, 2, 3, 10].map((n) => backoffMs(n, 300_000, 3_600_000, "none"))).toEqual([
      300_000, 600_000, 1_200_000, 3_600_000,
    ]);
  });
  it("reads delta-seconds and HTTP dates", () => {
    expect(retryAfterMs("120", NOW)).toBe(120_000);
    expect(retryAfterMs(new Date(NOW + 30_000).toUTCString(), NOW)).toBe(30_000);
    expect(retryAfterMs(null, NOW)).toBeNull();
    expect(retryAfterMs("soon", NOW)).toBeNull();
  });
});

describe("readBody", () => {
  it("reads a body up to the limit and refuses a larger one, declared or streamed", async () => {
    expect(await readBody(new Response("é".repeat(5)), 10)).toBe("ééééé");
    await expect(readBody(new Response("x".repeat(11)), 10)).rejects.toThrow(/larger than 10/);
    await expect(readBody(new Response("x", { headers: { "content-length": "999" } }), 10)).rejects.toThrow(
      /999 bytes is larger than 10/,
    );
  });
});
