/** The feeder files ccxt's errors by class (instanceof), including the ones Binance's own class throws. */
import { describe, expect, it } from "vitest";
import { errorKind } from "../../../src/feeder/coin-feed.ts";
import { ccxtErrors, loadExchange } from "../../../src/feeder/exchange.ts";

describe("errorKind", () => {
  it("files each ccxt class, subclasses before their parents", () => {
    const e = ccxtErrors;
    expect(errorKind(new e.DDoSProtection("x"))).toBe("ban");
    expect(errorKind(new e.RateLimitExceeded("x"))).toBe("rate_limit");
    expect(errorKind(new e.RequestTimeout("x"))).toBe("timeout");
    expect(errorKind(new e.OnMaintenance("x"))).toBe("unavailable");
    expect(errorKind(new e.ExchangeNotAvailable("x"))).toBe("unavailable");
    expect(errorKind(new e.NetworkError("x"))).toBe("network");
    expect(errorKind(new e.BadSymbol("x"))).toBe("bad_symbol");
    expect(errorKind(new e.DDoSProtection("binance 429 Too Many Requests"))).toBe("rate_limit");
    expect(errorKind(new e.DDoSProtection("binance 418 I'm a teapot"))).toBe("ban");
    expect(errorKind(new Error("x"))).toBe("other");
    // A look-alike name is not ccxt's class.
    expect(errorKind(Object.assign(new Error("x"), { name: "RequestTimeout" }))).toBe("other");
  });

  it("recognises the errors an exchange class loaded by file throws (one module instance)", async () => {
    await loadExchange("binance");
    const Binance = (
      (await import(new URL("./src/binance.js", import.meta.resolve("ccxt")).href)) as {
        default: new (c: object) => { market(s: string): unknown };
      }
    ).default;
    let thrown: unknown;
    try {
      new Binance({}).market("NOPE/USDT");
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ccxtErrors.BaseError);
  });
});
