/**
 * `signals feed` configuration: defaults, flags over environment, seconds honoured as set, and
 * one clear line for each bad value.
 */
import { describe, expect, it } from "vitest";
import { parseFeedConfig } from "../../../src/config/feeder.ts";
import { ConfigError } from "../../../src/config.ts";

describe("parseFeedConfig", () => {
  it("has the documented defaults", () => {
    const c = parseFeedConfig({}, []);
    expect(c).toMatchObject({
      exchange: "binance",
      quote: "USDT",
      symbols: ["BTC", "ETH", "SOL", "BNB", "XRP"],
      tf: "15m",
      tfMs: 900_000,
      server: "http://127.0.0.1:8081",
      internalToken: null,
      restUrl: null,
      wsUrl: null,
      historyCandles: 1500,
      silenceMs: 1_800_000,
      auditEveryMs: 900_000,
      derivativesEveryMs: 300_000,
      failoverMs: 30_000,
      datasets: ["candles", "derivatives"],
    });
  });

  it("FEED_SILENCE defaults to twice the timeframe, at least 90 s", () => {
    expect(parseFeedConfig({ FEED_TF: "15m" }, []).silenceMs).toBe(1_800_000);
    expect(parseFeedConfig({ FEED_TF: "30m", FEED_SILENCE: "" }, []).silenceMs).toBe(3_600_000);
    expect(parseFeedConfig({ FEED_TF: "1h" }, []).silenceMs).toBe(7_200_000);
  });

  it(
    "--datasets (or FEED_DATASETS; the flag wins) takes the context " +
      "datasets too, trimmed, lower-cased and de-duplicated",
    () => {
      expect(parseFeedConfig({}, ["--datasets", " News,fundamentals ,MACRO,derivatives,news"]).datasets).toEqual([
        "news",
        "fundamentals",
        "macro",
        "derivatives",
      ]);
      expect(parseFeedConfig({ FEED_DATASETS: "macro" }, []).datasets).toEqual(["macro"]);
      expect(parseFeedConfig({ FEED_DATASETS: "macro" }, ["--datasets", "candles,news"]).datasets).toEqual([
        "candles",
        "news",
      ]);
      expect(parseFeedConfig({ FEED_DATASETS: " " }, []).datasets).toEqual(["candles", "derivatives"]);
    },
  );

  it("flags win over the environment; codes are trimmed, upper-cased and de-duplicated", () => {
    const c = parseFeedConfig(
      {
        FEED_EXCHANGE: "kraken",
        FEED_SYMBOLS: "ADA",
        FEED_TF: "4h",
        FEED_QUOTE: "usdc",
        FEED_SERVER: "http://10.0.0.2:8081/",
      },
      ["--exchange", "Binance", "--symbols", " btc, eth ,btc,,sol ", "--tf", "1h"],
    );
    expect(c).toMatchObject({
      exchange: "binance",
      symbols: ["BTC", "ETH", "SOL"],
      tf: "1h",
      quote: "USDC",
      server: "http://10.0.0.2:8081",
    });
  });

  it("any positive number of seconds set explicitly is honoured", () => {
    const c = parseFeedConfig(
      {
        FEED_SILENCE: "2",
        FEED_AUDIT_EVERY: "0.5",
        FEED_DERIVATIVES_EVERY: "7",
        FEED_FAILOVER: "3",
        FEED_HISTORY: "10",
        FEED_METRICS_PORT: "0",
      },
      [],
    );
    expect(c).toMatchObject({
      silenceMs: 2_000,
      auditEveryMs: 500,
      derivativesEveryMs: 7_000,
      failoverMs: 3_000,
      historyCandles: 10,
      metricsPort: 0,
    });
  });

  it("base URLs of the exchange and the internal token come from the environment", () => {
    const c = parseFeedConfig(
      { FEED_REST_URL: "http://127.0.0.1:9000/", FEED_WS_URL: "ws://127.0.0.1:9000", INTERNAL_TOKEN: "tok" },
      [],
    );
    expect(c).toMatchObject({ restUrl: "http://127.0.0.1:9000", wsUrl: "ws://127.0.0.1:9000", internalToken: "tok" });
  });

  it.each([
    [{ FEED_SILENCE: "0" }, [], /FEED_SILENCE must be a positive number of seconds/],
    [{ FEED_FAILOVER: "-3" }, [], /FEED_FAILOVER must be a positive number of seconds/],
    [{ FEED_AUDIT_EVERY: "soon" }, [], /FEED_AUDIT_EVERY must be a (positive )?number of seconds/],
    [{}, ["--tf", "2h"], /--tf must be one of/],
    [{}, ["--symbols", "BTC-USDT"], /--symbols must be 1-15 letters or digits/],
    [{ FEED_REST_URL: "ftp://x" }, [], /FEED_REST_URL must be a http or https URL/],
    [{ FEED_WS_URL: "http://x" }, [], /FEED_WS_URL must be a ws or wss URL/],
    [{}, ["--bogus"], /Unknown option '--bogus'/],
    [{ FEED_HISTORY: "1.5" }, [], /FEED_HISTORY must be a whole number/],
    [{}, ["--datasets", "candles,weather"], /^--datasets takes candles, derivatives, news, fundamentals, macro$/],
    [{ FEED_DATASETS: "news,Weather" }, [], /^--datasets takes candles, derivatives, news, fundamentals, macro$/],
    [{}, ["--datasets", ","], /^--datasets needs at least one of candles, derivatives, news, fundamentals, macro$/],
  ])("refuses %j %j with one line", (env, argv, message) => {
    expect(() => parseFeedConfig(env, argv)).toThrow(ConfigError);
    expect(() => parseFeedConfig(env, argv)).toThrow(message);
  });
});
