/**
 * The pure parts of the free endpoints: validation of pushed rows (every reason, with the
 * boundaries), the collection of a stream (duplicates within a stream, capped report with
 * complete counts, the row cap), the request filters (limit, since, symbols, cursor), the
 * JSON-lines reader of `signals data import`, and the movers' rankings.
 */
import { describe, expect, it } from "vitest";
import { rowFromJsonLine } from "../../../src/cli/data-import-command.ts";
import { errorCodeOf } from "../../../src/errors.ts";
import {
  checkDerivatives,
  checkFundamentals,
  checkMacro,
  checkNews,
  collectStream,
  type DerivativesInput,
  type FundamentalsInput,
  MAX_REPORTED,
  MAX_STREAM_ROWS,
  type MacroInput,
  type NewsInput,
  TooManyRowsError,
} from "../../../src/market-data/datasets.ts";
import { type MoverRow, oneProvenance, rankMovers } from "../../../src/market-data/movers.ts";
import {
  encodeCursor,
  LIMITS,
  parseCursor,
  parseInstant,
  parseLimit,
  parseSeriesFilter,
  parseSince,
  parseSymbolFilter,
} from "../../../src/market-data/request.ts";

const NOW = Date.UTC(2026, 10, 15, 4, 0);
const MIN = 60_000;

const derivatives = (o: Partial<DerivativesInput> = {}): DerivativesInput => ({
  symbol: "BTC",
  venue: "binance-futures",
  time: NOW - MIN,
  fundingRate: 0.0001,
  openInterestUsd: 1e9,
  longShortRatio: 1.2,
  ...o,
});
const news = (o: Partial<NewsInput> = {}): NewsInput => ({
  id: "n-1",
  time: NOW - MIN,
  title: "Headline",
  source: "Wire",
  url: "https://example.com/a",
  coins: ["BTC"],
  ...o,
});
const macro = (o: Partial<MacroInput> = {}): MacroInput => ({
  series: "US CPI YoY",
  time: NOW - 30 * 24 * 60 * MIN,
  value: 3.1,
  unit: "%",
  source: "BLS",
  ...o,
});
const fundamentals = (o: Partial<FundamentalsInput> = {}): FundamentalsInput => ({
  symbol: "BTC",
  time: NOW - MIN,
  circulatingSupply: 19e6,
  maxSupply: 21e6,
  marketCapUsd: 1.2e12,
  rank: 1,
  source: "coingecko",
  ...o,
});

const reason = (r: { ok: boolean; reason?: string }) => (r.ok ? null : r.reason);

describe("derivatives rows", () => {
  it("accepts a full row and one with a single value; normalises symbol and venue; unset values become null", () => {
    expect(checkDerivatives(derivatives({ symbol: " btc ", venue: "  okx  " }), NOW)).toEqual({
      ok: true,
      row: {
        symbol: "BTC",
        venue: "okx",
        time: NOW - MIN,
        fundingRate: 0.0001,
        openInterestUsd: 1e9,
        longShortRatio: 1.2,
      },
    });
    const only = checkDerivatives({ symbol: "ETH", venue: "v", time: NOW, fundingRate: -1 }, NOW);
    expect(only).toEqual({
      ok: true,
      row: { symbol: "ETH", venue: "v", time: NOW, fundingRate: -1, openInterestUsd: null, longShortRatio: null },
    });
    expect(reason(checkDerivatives(derivatives({ openInterestUsd: 0, time: NOW + 5 * MIN }), NOW))).toBeNull();
  });

  it.each<[string, Partial<DerivativesInput>]>([
    ["invalid_symbol", { symbol: "BTC-USDT" }],
    ["invalid_symbol", { symbol: "" }],
    ["invalid_venue", { venue: "  " }],
    ["invalid_venue", { venue: "x".repeat(65) }],
    ["invalid_venue", { venue: "a\nb" }],
    ["invalid_time", { time: 0 }],
    ["invalid_time", { time: -1 }],
    ["invalid_time", { time: 1.5 }],
    ["invalid_time", { time: Number.NaN }],
    ["future_time", { time: NOW + 5 * MIN + 1 }],
    ["no_values", { fundingRate: undefined, openInterestUsd: undefined, longShortRatio: undefined }],
    ["non_finite_value", { fundingRate: Number.NaN }],
    ["non_finite_value", { openInterestUsd: Number.POSITIVE_INFINITY }],
    ["funding_rate_out_of_range", { fundingRate: 1.0001 }],
    ["funding_rate_out_of_range", { fundingRate: -2 }],
    ["negative_open_interest", { openInterestUsd: -1 }],
    ["non_positive_ratio", { longShortRatio: 0 }],
    ["non_positive_ratio", { longShortRatio: -0.5 }],
  ])("rejects %s: %j", (expected, overrides) => {
    expect(reason(checkDerivatives(derivatives(overrides), NOW))).toBe(expected);
  });

  it("reports the first failed check when several apply", () => {
    expect(reason(checkDerivatives(derivatives({ symbol: "?", venue: "", time: 0 }), NOW))).toBe("invalid_symbol");
    expect(reason(checkDerivatives(derivatives({ time: 0, fundingRate: 5 }), NOW))).toBe("invalid_time");
  });
});

describe("news items", () => {
  it("accepts an item; upper-cases and de-duplicates coins; an empty coin list is fine", () => {
    expect(checkNews(news({ coins: ["btc", "ETH", "Btc"], title: "  Title  " }), NOW)).toEqual({
      ok: true,
      row: {
        id: "n-1",
        time: NOW - MIN,
        title: "Title",
        source: "Wire",
        url: "https://example.com/a",
        coins: ["BTC", "ETH"],
      },
    });
    expect(reason(checkNews(news({ coins: [] }), NOW))).toBeNull();
    expect(
      reason(
        checkNews(
          news({ url: "http://example.com/x?q=1#f", coins: Array.from({ length: 20 }, (_, i) => `C${i}`) }),
          NOW,
        ),
      ),
    ).toBeNull();
  });

  it.each<[string, Partial<NewsInput>]>([
    ["invalid_id", { id: "" }],
    ["invalid_id", { id: "has space" }],
    ["invalid_id", { id: "x".repeat(129) }],
    ["invalid_id", { id: "é" }],
    ["invalid_time", { time: 0 }],
    ["future_time", { time: NOW + 6 * MIN }],
    ["invalid_title", { title: "" }],
    ["invalid_title", { title: "x".repeat(501) }],
    ["invalid_source", { source: " " }],
    ["invalid_source", { source: "s".repeat(101) }],
    ["invalid_url", { url: "ftp://example.com/a" }],
    ["invalid_url", { url: "javascript:alert(1)" }],
    ["invalid_url", { url: "https://exa mple.com/" }],
    ["invalid_url", { url: "not a url" }],
    ["invalid_url", { url: `https://example.com/${"a".repeat(2048)}` }],
    ["invalid_symbol", { coins: ["BTC", "B-D"] }],
    ["too_many_coins", { coins: Array.from({ length: 21 }, (_, i) => `C${i}`) }],
  ])("rejects %s: %j", (expected, overrides) => {
    expect(reason(checkNews(news(overrides), NOW))).toBe(expected);
  });
});

describe("macro points", () => {
  it("accepts a point, with negative and zero values", () => {
    expect(checkMacro(macro({ series: " US CPI YoY ", value: -0.4 }), NOW)).toEqual({
      ok: true,
      row: { ...macro(), value: -0.4 },
    });
    expect(reason(checkMacro(macro({ value: 0, series: "A.b_c:d/e (f) 5% -g" }), NOW))).toBeNull();
  });

  it.each<[string, Partial<MacroInput>]>([
    ["invalid_series", { series: "" }],
    ["invalid_series", { series: "x".repeat(65) }],
    ["invalid_series", { series: "CPI; DROP TABLE" }],
    ["invalid_time", { time: -5 }],
    ["future_time", { time: NOW + 24 * 60 * MIN }],
    ["non_finite_value", { value: Number.NaN }],
    ["non_finite_value", { value: Number.NEGATIVE_INFINITY }],
    ["invalid_unit", { unit: "" }],
    ["invalid_unit", { unit: "u".repeat(33) }],
    ["invalid_source", { source: "" }],
  ])("rejects %s: %j", (expected, overrides) => {
    expect(reason(checkMacro(macro(overrides), NOW))).toBe(expected);
  });
});

describe("fundamentals rows", () => {
  it("accepts a row; no cap and no rank become null; circulating = max is fine", () => {
    expect(checkFundamentals(fundamentals({ maxSupply: undefined, rank: undefined, symbol: "eth" }), NOW)).toEqual({
      ok: true,
      row: {
        symbol: "ETH",
        time: NOW - MIN,
        circulatingSupply: 19e6,
        maxSupply: null,
        marketCapUsd: 1.2e12,
        rank: null,
        source: "coingecko",
        totalSupply: null,
        fullyDilutedValuationUsd: null,
        athUsd: null,
        athTime: null,
      },
    });
    expect(reason(checkFundamentals(fundamentals({ circulatingSupply: 21e6 }), NOW))).toBeNull();
  });

  it("keeps total supply, fully diluted valuation and the all-time high when given", () => {
    const checked = checkFundamentals(
      fundamentals({
        totalSupply: 19.9e6,
        fullyDilutedValuationUsd: 1.33e12,
        athUsd: 126_080,
        athTime: NOW - 30 * 24 * 60 * MIN,
      }),
      NOW,
    );
    expect(checked).toMatchObject({
      ok: true,
      row: {
        totalSupply: 19.9e6,
        fullyDilutedValuationUsd: 1.33e12,
        athUsd: 126_080,
        athTime: NOW - 30 * 24 * 60 * MIN,
      },
    });
  });

  it.each<[string, Partial<FundamentalsInput>]>([
    ["invalid_symbol", { symbol: "TOO-LONG-SYMBOL-NAME" }],
    ["invalid_time", { time: 0 }],
    ["future_time", { time: NOW + 10 * MIN }],
    ["non_finite_value", { circulatingSupply: Number.NaN }],
    ["non_finite_value", { maxSupply: Number.POSITIVE_INFINITY }],
    ["non_finite_value", { marketCapUsd: Number.NaN }],
    ["negative_supply", { circulatingSupply: -1 }],
    ["negative_supply", { maxSupply: -1, circulatingSupply: 0 }],
    ["supply_above_max", { circulatingSupply: 22e6 }],
    ["negative_market_cap", { marketCapUsd: -1 }],
    ["invalid_rank", { rank: 0 }],
    ["invalid_rank", { rank: 1.5 }],
    ["non_finite_value", { totalSupply: Number.NaN }],
    ["non_finite_value", { fullyDilutedValuationUsd: Number.POSITIVE_INFINITY }],
    ["non_finite_value", { athUsd: Number.NaN }],
    ["negative_supply", { totalSupply: -1 }],
    ["negative_market_cap", { fullyDilutedValuationUsd: -1 }],
    ["non_positive_price", { athUsd: 0 }],
    ["invalid_time", { athTime: 0 }],
    ["future_time", { athTime: NOW + 10 * MIN }],
    ["invalid_source", { source: "" }],
  ])("rejects %s: %j", (expected, overrides) => {
    expect(reason(checkFundamentals(fundamentals(overrides), NOW))).toBe(expected);
  });
});

describe("collectStream", () => {
  it("keeps the first of repeated news ids and counts the others as duplicates", async () => {
    const { rows, summary } = await collectStream(
      "news",
      [news({ id: "a", title: "first" }), news({ id: "b" }), news({ id: "a", title: "second" })],
      NOW,
    );
    expect(rows.map((r) => [r.id, r.title])).toEqual([
      ["a", "first"],
      ["b", "Headline"],
    ]);
    expect(summary).toEqual({ accepted: 0, rejected: 0, duplicates: 1, rejections: [], reasons: {} });
  });

  it("keeps the latest row per (symbol, venue) of a snapshot dataset, whatever the order", async () => {
    const { rows, summary } = await collectStream(
      "derivatives",
      [
        derivatives({ time: NOW - 3 * MIN, fundingRate: 0.1 }),
        derivatives({ time: NOW - MIN, fundingRate: 0.3 }),
        derivatives({ time: NOW - 2 * MIN, fundingRate: 0.2 }),
        derivatives({ venue: "okx" }),
      ],
      NOW,
    );
    expect(rows.map((r) => [r.venue, r.fundingRate])).toEqual([
      ["binance-futures", 0.3],
      ["okx", 0.0001],
    ]);
    expect(summary.duplicates).toBe(2);
  });

  it("reports the first 100 rejections with their stream index and key, and counts every reason", async () => {
    const inputs = [
      macro({ series: "OK" }),
      ...Array.from({ length: 150 }, (_, i) => (i % 3 === 0 ? macro({ unit: "" }) : macro({ series: `bad;${i}` }))),
    ];
    const { rows, summary } = await collectStream("macro", inputs, NOW);
    expect(rows).toHaveLength(1);
    expect(summary.rejected).toBe(150);
    expect(summary.rejections).toHaveLength(MAX_REPORTED);
    expect(summary.rejections[0]).toEqual({ index: 1, key: "US CPI YoY", reason: "invalid_unit" });
    expect(summary.rejections[1]).toEqual({ index: 2, key: "bad;1", reason: "invalid_series" });
    expect(summary.reasons).toEqual({ invalid_unit: 50, invalid_series: 100 });
  });

  it("truncates the reported key to 64 characters", async () => {
    const { summary } = await collectStream("news", [news({ id: "x".repeat(300) })], NOW);
    expect(summary.rejections[0]).toEqual({ index: 0, key: "x".repeat(64), reason: "invalid_id" });
  });

  it(`refuses a stream of more than ${MAX_STREAM_ROWS} rows`, async () => {
    function* many() {
      for (let i = 0; i <= MAX_STREAM_ROWS; i++) yield macro({ time: NOW - (i + 1) * MIN });
    }
    await expect(collectStream("macro", many(), NOW)).rejects.toBeInstanceOf(TooManyRowsError);
  });
});

describe("request filters", () => {
  const code = (f: () => unknown) => {
    try {
      f();
      return null;
    } catch (err) {
      return errorCodeOf(err);
    }
  };

  it("limit: default when empty, clamped to the maximum, 400 for anything but a whole number >= 1", () => {
    expect(parseLimit("", LIMITS.news)).toBe(20);
    expect(parseLimit(" 7 ", LIMITS.news)).toBe(7);
    expect(parseLimit("100", LIMITS.news)).toBe(100);
    expect(parseLimit("101", LIMITS.news)).toBe(100);
    expect(parseLimit("999999999", LIMITS.movers)).toBe(50);
    for (const bad of ["0", "-1", "1.5", "abc", "1e3", "10,20", "0x10", "9999999999"])
      expect(
        code(() => parseLimit(bad, LIMITS.news)),
        bad,
      ).toBe("bad_request");
  });

  it("since: epoch ms or ISO-8601 with an offset; a local time or a date alone is refused", () => {
    expect(parseSince("")).toBeNull();
    expect(parseSince("1795305577146")).toBe(1795305577146);
    expect(parseSince("0")).toBe(0);
    expect(parseSince("2026-11-15T04:00:00Z")).toBe(NOW);
    expect(parseSince("2026-11-15T12:00:00+08:00")).toBe(NOW);
    expect(parseSince("2026-11-15 12:00+0800")).toBe(NOW);
    expect(parseSince("2026-11-15T04:00:00.000z")).toBe(NOW);
    for (const bad of ["2026-11-15", "2026-11-15T04:00:00", "yesterday", "-5", "1.5", "2026-13-45T99:00:00Z"])
      expect(
        code(() => parseSince(bad)),
        bad,
      ).toBe("bad_request");
    expect(Number.isNaN(parseInstant("2026-11-15T04:00:00"))).toBe(true);
  });

  it("symbols: trimmed, upper-cased, empties and duplicates dropped, first 50; series are exact", () => {
    expect(parseSymbolFilter("")).toEqual([]);
    expect(parseSymbolFilter(" btc, ETH,,btc ,sol")).toEqual(["BTC", "ETH", "SOL"]);
    expect(parseSymbolFilter(Array.from({ length: 60 }, (_, i) => `c${i}`).join(","))).toHaveLength(50);
    expect(parseSeriesFilter(" US CPI YoY ,PMI,PMI")).toEqual(["US CPI YoY", "PMI"]);
  });

  it("cursor: round-trips, and anything else (garbage, another endpoint's cursor, altered) is a 400", () => {
    const c = encodeCursor("news", [NOW, "n-1"]);
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(parseCursor("news", c)).toEqual([NOW, "n-1"]);
    expect(parseCursor("news", "")).toBeNull();
    expect(parseCursor("derivatives", encodeCursor("derivatives", ["BTC", "okx"]))).toEqual(["BTC", "okx"]);
    const forged = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    for (const bad of [
      "abc",
      "!!!",
      encodeCursor("macro", [NOW, "CPI"]),
      forged(["news", "x", "n"]),
      forged(["news", NOW]),
      forged({}),
      forged(["news", 1.5, "a"]),
      "A".repeat(2000),
    ]) {
      expect(
        code(() => parseCursor("news", bad)),
        bad,
      ).toBe("bad_request");
    }
  });
});

describe("JSON lines of `signals data import`", () => {
  it("maps proto field names to the push message, with ISO or ms times and optional fields left unset", () => {
    const row = rowFromJsonLine(
      "derivatives",
      JSON.stringify({
        symbol: "btc",
        venue: "okx",
        time: "2026-11-15T04:00:00Z",
        funding_rate: 0.0001,
        long_short_ratio: null,
      }),
    );
    expect(row).toEqual({ ok: true, init: { symbol: "btc", venue: "okx", time: BigInt(NOW), fundingRate: 0.0001 } });
    const f = rowFromJsonLine(
      "fundamentals",
      JSON.stringify({ symbol: "BTC", time: NOW, circulating_supply: 1, market_cap_usd: 2, rank: 3, source: "s" }),
    );
    expect(f).toEqual({
      ok: true,
      init: { symbol: "BTC", time: BigInt(NOW), circulatingSupply: 1, marketCapUsd: 2, rank: 3, source: "s" },
    });
  });

  it("sends missing required fields empty (the service names them) and unreadable times as -1", () => {
    expect(rowFromJsonLine("macro", "{}")).toEqual({
      ok: true,
      init: { series: "", time: 0n, value: Number.NaN, unit: "", source: "" },
    });
    expect(rowFromJsonLine("news", JSON.stringify({ id: "a", time: "yesterday" }))).toMatchObject({
      ok: true,
      init: { time: -1n, coins: [] },
    });
  });

  it("refuses what cannot be sent: invalid_json, unknown_field, wrong_type", () => {
    expect(rowFromJsonLine("news", "{not json")).toEqual({ ok: false, reason: "invalid_json", key: "" });
    expect(rowFromJsonLine("news", "[1,2]")).toEqual({ ok: false, reason: "invalid_json", key: "" });
    expect(rowFromJsonLine("news", "null")).toEqual({ ok: false, reason: "invalid_json", key: "" });
    expect(rowFromJsonLine("news", JSON.stringify({ id: "a", titel: "typo" }))).toEqual({
      ok: false,
      reason: "unknown_field",
      key: "a",
    });
    expect(rowFromJsonLine("macro", JSON.stringify({ series: "S", value: "3.1" }))).toEqual({
      ok: false,
      reason: "wrong_type",
      key: "S",
    });
    expect(rowFromJsonLine("news", JSON.stringify({ id: "a", coins: "BTC" }))).toEqual({
      ok: false,
      reason: "wrong_type",
      key: "a",
    });
    expect(rowFromJsonLine("fundamentals", JSON.stringify({ symbol: "X", rank: 1.5 }))).toEqual({
      ok: false,
      reason: "wrong_type",
      key: "X",
    });
    expect(rowFromJsonLine("derivatives", JSON.stringify({ symbol: "X", time: true }))).toEqual({
      ok: false,
      reason: "wrong_type",
      key: "X",
    });
  });
});

describe("oneProvenance", () => {
  const row = (symbol: string, demo: boolean): MoverRow => ({
    symbol,
    price: 1,
    changePct: 0,
    change24hPct: 1,
    volume: 1,
    volume24h: 1,
    updatedAt: NOW,
    demo,
  });

  it("ranks real coins only when any is real, and the demo coins only on a server with nothing real", () => {
    expect(oneProvenance([row("A", true), row("B", false), row("C", true)]).map((r) => r.symbol)).toEqual(["B"]);
    expect(oneProvenance([row("A", true), row("C", true)]).map((r) => r.symbol)).toEqual(["A", "C"]);
  });
});

describe("rankMovers", () => {
  const row = (symbol: string, change24hPct: number | null, volume24h: number): MoverRow => ({
    symbol,
    price: 1,
    changePct: 0,
    change24hPct,
    volume: 1,
    volume24h,
    updatedAt: NOW,
    demo: false,
  });

  it(
    "gainers (> 0, largest first), losers (< 0, most negative " + "first), ties by symbol; no 24 h change, no ranking",
    () => {
      const rows = [
        row("A", 5, 10),
        row("B", -3, 30),
        row("C", 5, 20),
        row("D", null, 99),
        row("E", 0, 5),
        row("F", -7, 30),
      ];
      const m = rankMovers(rows, 10);
      expect(m.gainers.map((r) => r.symbol)).toEqual(["A", "C"]);
      expect(m.losers.map((r) => r.symbol)).toEqual(["F", "B"]);
      expect(m.volumeLeaders.map((r) => r.symbol)).toEqual(["D", "B", "F", "C", "A", "E"]);
    },
  );

  it("cuts every list at the limit", () => {
    const rows = Array.from({ length: 20 }, (_, i) => row(`S${i}`, i - 10, i));
    const m = rankMovers(rows, 3);
    expect(m.gainers.map((r) => r.change24hPct)).toEqual([9, 8, 7]);
    expect(m.losers.map((r) => r.change24hPct)).toEqual([-10, -9, -8]);
    expect(m.volumeLeaders.map((r) => r.volume24h)).toEqual([19, 18, 17]);
  });
});

describe("FREE_RATE_LIMIT", () => {
  it("defaults to 60 per minute, takes a whole number from 1, and stops the start otherwise", async () => {
    const { loadConfig, ConfigError } = await import("../../../src/config.ts");
    expect(loadConfig({}).freeRateLimit).toBe(60);
    expect(loadConfig({ FREE_RATE_LIMIT: " 5 " }).freeRateLimit).toBe(5);
    for (const bad of ["0", "-1", "ten", "1.5"])
      expect(() => loadConfig({ FREE_RATE_LIMIT: bad }), bad).toThrow(ConfigError);
  });
});
