import { describe, expect, it } from "vitest";
import { isWellFormedSymbol } from "../../../src/market/symbols.ts";
import { normaliseSymbols, normaliseTimeframe } from "../../../src/signals/request.ts";

describe("symbols parameter", () => {
  it("splits, trims, upper-cases, drops empties and duplicates keeping the first", () => {
    expect(normaliseSymbols(" btc, eth,,BTC , sol ,eth", 8)).toEqual(["BTC", "ETH", "SOL"]);
  });
  it("keeps only the first 8 accepted symbols and ignores the rest", () => {
    expect(normaliseSymbols("a,b,c,d,e,f,g,h,i,j", 8)).toEqual(["A", "B", "C", "D", "E", "F", "G", "H"]);
  });
  it("counts duplicates once when applying the limit", () => {
    expect(normaliseSymbols("a,a,b,b,c,d,e,f,g,h,i", 8)).toEqual(["A", "B", "C", "D", "E", "F", "G", "H"]);
  });
  it("falls back to the default list when absent or empty after cleaning", () => {
    const defaults = ["BTC", "ETH", "SOL", "BNB", "XRP"];
    expect(normaliseSymbols(undefined, 8)).toEqual(defaults);
    expect(normaliseSymbols("", 8)).toEqual(defaults);
    expect(normaliseSymbols(" , ,, ", 8)).toEqual(defaults);
  });
  it("honours a configured maximum", () => {
    expect(normaliseSymbols("a,b,c", 2)).toEqual(["A", "B"]);
  });
  it("accepts base codes and rejects malformed ones", () => {
    for (const ok of ["BTC", "1INCH", "BTCUSDT", "A"]) expect(isWellFormedSymbol(ok)).toBe(true);
    for (const bad of ["B-D", "BTC/USDT", "", "ÄBC", "A".repeat(16), "BT C", "<SCRIPT>"])
      expect(isWellFormedSymbol(bad)).toBe(false);
  });
});

describe("tf parameter", () => {
  it("accepts exactly the five timeframes", () => {
    for (const tf of ["15m", "30m", "1h", "4h", "1d"]) expect(normaliseTimeframe(tf)).toBe(tf);
  });
  it("silently turns anything else into 4h", () => {
    for (const tf of [undefined, "", "1H", "5m", "4h ", "1w", "4h,1h", "\u0000"])
      expect(normaliseTimeframe(tf)).toBe("4h");
  });
});
