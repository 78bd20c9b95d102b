import { describe, expect, it } from "vitest";
import { basketReturns, splitByRegime, trailingRegimes } from "../../../src/performance/regime.ts";

describe("market regime by the basket's trailing return", () => {
  it("averages the coins into an equal-weight basket, period by period", () => {
    expect(
      basketReturns([
        [0.1, -0.2],
        [0.3, 0],
      ]),
    ).toEqual([0.2, -0.1]);
    expect(() => basketReturns([[0.1], [0.1, 0.2]])).toThrow(RangeError);
  });

  it("classifies a period by the compounded return of the periods before it, never its own", () => {
    // Look-back 2: period 2 sees +10%, −5% (1.045: up); period 3 sees −5%, −10% (0.855: down);
    // period 4 sees −10%, +100% (1.8: up); period 5 sees +100%, −50% (exactly 1: neither).
    const basket = [0.1, -0.05, -0.1, 1, -0.5, 0.2];
    expect([...trailingRegimes(basket, 2)]).toEqual([0, 0, 1, -1, 1, 0]);
    // A huge move in period 2 does not change period 2's own regime.
    const jumped = [...basket];
    jumped[2] = 5;
    expect(trailingRegimes(jumped, 2)[2]).toBe(1);
    expect(() => trailingRegimes(basket, 0)).toThrow(RangeError);
  });

  it("splits a return series by the regime of each period", () => {
    const regimes = Int8Array.from([0, 1, -1, 1, -1]);
    expect(splitByRegime([0.01, 0.02, 0.03, 0.04, 0.05], regimes)).toEqual({ up: [0.02, 0.04], down: [0.03, 0.05] });
    expect(() => splitByRegime([0.01], regimes)).toThrow(RangeError);
  });
});
