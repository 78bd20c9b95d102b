import { describe, expect, it } from "vitest";
import { normalCdf, normalDensity, normalQuantile } from "../../../src/performance/normal.ts";

// Reference values of Φ and Φ⁻¹ to 16 significant digits (as in standard tables, e.g. Abramowitz
// & Stegun 26.2, and as scipy.stats.norm gives them).
const CDF: readonly [number, number][] = [
  [0, 0.5],
  [1, 0.8413447460685429],
  [1.959963984540054, 0.975],
  [-1.5, 0.06680720126885807],
  [2.5, 0.9937903346742238],
  [-3, 0.0013498980316300933],
  [-6, 9.865876450376946e-10],
];
const QUANTILE: readonly [number, number][] = [
  [0.5, 0],
  [0.975, 1.959963984540054],
  [0.025, -1.9599639845400545],
  [0.99, 2.3263478740408408],
  [1 - 1 / (100 * Math.E), 2.6802104449668875],
  [1e-10, -6.361340902404056],
  [1e-300, -37.0470962993612],
];

describe("standard normal CDF and quantile", () => {
  it.each(CDF)("Φ(%s) = %s within 1e-15", (x, p) => {
    expect(Math.abs(normalCdf(x) - p)).toBeLessThan(1e-15);
  });

  it.each(QUANTILE)("Φ⁻¹(%s) = %s within 1e-15 relative", (p, x) => {
    expect(Math.abs(normalQuantile(p) - x)).toBeLessThanOrEqual(1e-15 * Math.max(1, Math.abs(x)));
  });

  it("keeps relative accuracy deep in the lower tail (Φ(−10), Φ(−20), Φ(−37))", () => {
    for (const [x, p] of [
      [-10, 7.61985302416047e-24],
      [-20, 2.7536241186061556e-89],
      [-37, 5.7255712225239266e-300],
    ] as const) {
      expect(Math.abs(normalCdf(x) / p - 1)).toBeLessThan(1e-12);
    }
  });

  it("the quantile inverts the CDF across the range (and is odd around ½)", () => {
    for (let i = 1; i < 200; i++) {
      const p = i / 200;
      expect(normalCdf(normalQuantile(p))).toBeCloseTo(p, 14);
      expect(normalQuantile(1 - p)).toBeCloseTo(-normalQuantile(p), 12);
    }
  });

  it("is monotone, symmetric and saturates in the tails", () => {
    let previous = -1;
    for (let x = -12; x <= 12; x += 0.01) {
      const p = normalCdf(x);
      expect(p).toBeGreaterThanOrEqual(previous);
      expect(p + normalCdf(-x)).toBeCloseTo(1, 15);
      previous = p;
    }
    expect(normalCdf(-40)).toBe(0);
    expect(normalCdf(40)).toBe(1);
    expect(normalCdf(Number.NEGATIVE_INFINITY)).toBe(0);
    expect(normalCdf(Number.POSITIVE_INFINITY)).toBe(1);
    expect(normalCdf(Number.NaN)).toBeNaN();
    expect(normalDensity(0)).toBeCloseTo(1 / Math.sqrt(2 * Math.PI), 16);
  });

  it("gives ±∞ at 0 and 1 and refuses anything that is not a probability", () => {
    expect(normalQuantile(0)).toBe(Number.NEGATIVE_INFINITY);
    expect(normalQuantile(1)).toBe(Number.POSITIVE_INFINITY);
    for (const bad of [-0.1, 1.5, Number.NaN]) expect(() => normalQuantile(bad)).toThrow(RangeError);
  });
});
