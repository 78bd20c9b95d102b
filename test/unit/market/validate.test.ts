/**
 * checkCandleFields: every rejection reason with a concrete candle, the boundaries around each
 * check, and which reason wins when a candle is wrong in several ways.
 */
import { describe, expect, it } from "vitest";
import { type CandleUpdate, checkCandleFields, type RejectReason } from "../../../src/market/validate.ts";

const NOW = Date.UTC(2026, 10, 15, 4, 0); // 2026-11-15T04:00Z
const H = 3_600_000;

/** A valid closed 1h BTC candle one hour before NOW. */
function good(overrides: Partial<CandleUpdate> = {}): CandleUpdate {
  return {
    symbol: "BTC",
    tf: "1h",
    openTime: NOW - H,
    open: 100,
    high: 110,
    low: 95,
    close: 105,
    volume: 12.5,
    closed: true,
    ...overrides,
  };
}

const check = (overrides: Partial<CandleUpdate>) => checkCandleFields(good(overrides), NOW);

describe("checkCandleFields accepts", () => {
  it("a well-formed candle on every timeframe, closed or forming", () => {
    expect(check({})).toBeNull();
    expect(check({ closed: false })).toBeNull();
    for (const [tf, ms] of [
      ["15m", 15 * 60_000],
      ["30m", 30 * 60_000],
      ["1h", H],
      ["4h", 4 * H],
      ["1d", 24 * H],
    ] as const) {
      expect(check({ tf, openTime: Math.floor((NOW - ms) / ms) * ms }), tf).toBeNull();
    }
  });

  it("the degenerate edges: a flat candle, zero volume, open/close exactly on high and low", () => {
    expect(check({ open: 100, high: 100, low: 100, close: 100 })).toBeNull();
    expect(check({ volume: 0 })).toBeNull();
    expect(check({ open: 110, close: 95 })).toBeNull();
    expect(check({ open: 95, close: 110 })).toBeNull();
    expect(check({ open: 1e-8, high: 1e-8, low: 1e-8, close: 1e-8 })).toBeNull();
  });

  it("a candle starting up to one period ahead of the clock (feeder clock drift), and epoch 0", () => {
    expect(check({ openTime: NOW })).toBeNull();
    expect(check({ openTime: NOW + H })).toBeNull();
    expect(check({ openTime: 0 })).toBeNull();
  });
});

describe("checkCandleFields rejects", () => {
  const cases: Array<[RejectReason, string, Partial<CandleUpdate>]> = [
    ["invalid_symbol", "empty symbol", { symbol: "" }],
    ["invalid_symbol", "lower case (the feed upper-cases before checking)", { symbol: "btc" }],
    ["invalid_symbol", "a pair with a dash", { symbol: "BTC-USDT" }],
    ["invalid_symbol", "16 characters", { symbol: "ABCDEFGHIJKLMNOP" }],
    ["invalid_symbol", "inner space", { symbol: "BT C" }],
    ["unknown_timeframe", "2h", { tf: "2h" }],
    ["unknown_timeframe", "upper-case 1H", { tf: "1H" }],
    ["unknown_timeframe", "1m", { tf: "1m" }],
    ["unknown_timeframe", "empty", { tf: "" }],
    ["non_finite_value", "NaN close", { close: Number.NaN }],
    ["non_finite_value", "Infinity high", { high: Number.POSITIVE_INFINITY }],
    ["non_finite_value", "-Infinity low", { low: Number.NEGATIVE_INFINITY }],
    ["non_finite_value", "NaN open", { open: Number.NaN }],
    ["non_finite_value", "NaN volume", { volume: Number.NaN }],
    ["non_finite_value", "NaN openTime (an unparseable time)", { openTime: Number.NaN }],
    ["misaligned_open_time", "1h candle at :30", { openTime: NOW - H + 30 * 60_000 }],
    ["misaligned_open_time", "4h candle at 01:00 UTC", { tf: "4h", openTime: Date.UTC(2026, 10, 14, 1) }],
    ["misaligned_open_time", "1d candle at 00:00 MYT (16:00 UTC)", { tf: "1d", openTime: Date.UTC(2026, 10, 13, 16) }],
    ["misaligned_open_time", "fractional milliseconds", { openTime: NOW - H + 0.5 }],
    ["misaligned_open_time", "negative time", { openTime: -H }],
    ["misaligned_open_time", "beyond safe integers", { openTime: 2 ** 60 }],
    ["future_open_time", "two periods ahead", { openTime: NOW + 2 * H }],
    ["future_open_time", "a 15m candle 30 minutes ahead", { tf: "15m", openTime: NOW + 30 * 60_000 }],
    ["non_positive_price", "zero low", { low: 0, open: 100 }],
    ["non_positive_price", "negative open", { open: -1 }],
    ["non_positive_price", "all negative", { open: -5, high: -1, low: -10, close: -2 }],
    ["non_positive_price", "zero close", { close: 0, low: 0 }],
    ["negative_volume", "volume -1", { volume: -1 }],
    ["negative_volume", "volume -1e-12", { volume: -1e-12 }],
    ["high_below_low", "high 90 < low 95", { high: 90, open: 92, close: 93 }],
    ["high_below_low", "swapped high and low", { high: 95, low: 110 }],
    ["open_outside_range", "open above high", { open: 111 }],
    ["open_outside_range", "open below low", { open: 94.99 }],
    ["close_outside_range", "close above high", { close: 110.01 }],
    ["close_outside_range", "close below low", { close: 94 }],
  ];
  for (const [reason, label, overrides] of cases) {
    it(`${reason}: ${label}`, () => {
      expect(check(overrides)).toBe(reason);
    });
  }
});

describe("checkCandleFields reports the first failing check", () => {
  it("symbol before timeframe before values", () => {
    expect(check({ symbol: "b!", tf: "2h", close: Number.NaN })).toBe("invalid_symbol");
    expect(check({ tf: "2h", close: Number.NaN })).toBe("unknown_timeframe");
  });

  it("non-finite before alignment, alignment before prices, prices before volume and ranges", () => {
    expect(check({ openTime: NOW + 1, close: Number.POSITIVE_INFINITY })).toBe("non_finite_value");
    expect(check({ openTime: NOW + 1, close: -1 })).toBe("misaligned_open_time");
    expect(check({ openTime: NOW + 5 * H, close: -1 })).toBe("future_open_time");
    expect(check({ low: -1, volume: -1, high: -2 })).toBe("non_positive_price");
    expect(check({ volume: -1, high: 90 })).toBe("negative_volume");
    expect(check({ high: 90, open: 200 })).toBe("high_below_low");
    expect(check({ open: 200, close: 300 })).toBe("open_outside_range");
  });
});
