import { describe, expect, it } from "vitest";
import { probabilityOfBacktestOverfitting } from "../../../src/performance/backtest-overfitting.ts";
import { sharpeRatio } from "../../../src/performance/statistics.ts";
import { seededNormal } from "../../support/seeded-random.ts";

/** Rows of [A, B] from per-block means: each block is two periods, mean − 1% and mean + 1%. */
function twoPerBlock(meansA: readonly number[], meansB: readonly number[]): number[][] {
  return meansA.flatMap((a, b) => [
    [(a - 1) / 100, (meansB[b]! - 1) / 100],
    [(a + 1) / 100, (meansB[b]! + 1) / 100],
  ]);
}

/** CSCV written the slow, obvious way (rows gathered per split, Sharpe via statistics.ts), to compare with. */
function naivePbo(returns: readonly (readonly number[])[], blocks: number): number {
  const size = returns.length / blocks;
  const n = returns[0]!.length;
  const column = (rows: readonly (readonly number[])[], j: number): number[] => rows.map((r) => r[j]!);
  // A candidate without variation (one that never trades) scores 0, as the module documents.
  const sharpe = (values: readonly number[]): number => (Number.isNaN(sharpeRatio(values)) ? 0 : sharpeRatio(values));
  const blockRows = (set: readonly number[]): (readonly number[])[] =>
    set.flatMap((b) => returns.slice(b * size, (b + 1) * size));
  let overfit = 0;
  let splits = 0;
  const visit = (chosen: number[], next: number): void => {
    if (chosen.length === blocks / 2) {
      const rest = Array.from({ length: blocks }, (_, b) => b).filter((b) => !chosen.includes(b));
      const is = Array.from({ length: n }, (_, j) => sharpe(column(blockRows(chosen), j)));
      const oos = Array.from({ length: n }, (_, j) => sharpe(column(blockRows(rest), j)));
      const best = is.indexOf(Math.max(...is));
      const rank = oos.filter((v) => v < oos[best]!).length + (oos.filter((v) => v === oos[best]!).length + 1) / 2;
      if (Math.log(rank / (n + 1) / (1 - rank / (n + 1))) <= 0) overfit++;
      splits++;
      return;
    }
    for (let b = next; b < blocks; b++) visit([...chosen, b], b + 1);
  };
  visit([], 0);
  return overfit / splits;
}

describe("probability of backtest overfitting (CSCV)", () => {
  it("matches a case worked by hand: 2 candidates, 4 blocks, 6 splits, PBO 1/3", () => {
    // A has mean 2% in every block: Sharpe 2/√(4/3) = 1.732 on any two blocks.
    // B has means 3, 3, 1, 1: on blocks {0,1} 3/√(4/3) = 2.598, on {2,3} 0.866, on a mixed pair 2/√(8/3) = 1.225.
    // In-sample {0,1}: B wins, but on {2,3} it is worse than A: overfit. In-sample {2,3}: A wins,
    // but B is better on {0,1}: overfit. Mixed pairs: A wins in and out of sample: not overfit.
    const result = probabilityOfBacktestOverfitting(twoPerBlock([2, 2, 2, 2], [3, 3, 1, 1]), 4);
    expect(result.splits).toBe(6);
    expect(result.pbo).toBeCloseTo(2 / 6, 15);
    // Splits in lexicographic order {0,1} {0,2} {0,3} {1,2} {1,3} {2,3}; rank 1 of 2 → ω = 1/3, λ = ln ½.
    const ln2 = Math.log(2);
    expect(result.logits.map((l) => Number(l.toFixed(12)))).toEqual(
      [-ln2, ln2, ln2, ln2, ln2, -ln2].map((l) => Number(l.toFixed(12))),
    );
  });

  it("is 0 when one candidate dominates every block and 1 when in-sample skill always reverses", () => {
    const a = [3, 1, 2, 4, 2, 3];
    // B = A + 1% in every period: same spread, higher mean, so the best in and out of sample.
    expect(
      probabilityOfBacktestOverfitting(
        twoPerBlock(
          a,
          a.map((m) => m + 1),
        ),
        6,
      ).pbo,
    ).toBe(0);
    // B = −A with A summing to zero: whatever wins in sample has the opposite sign out of sample.
    const rows = twoPerBlock([3, 1, -1, -3], [0, 0, 0, 0]).map(([x]) => [x!, -x!]);
    expect(probabilityOfBacktestOverfitting(rows, 4).pbo).toBe(1);
  });

  it("equals the slow, obvious computation on random matrices (with a never-trading candidate)", () => {
    const z = seededNormal(5);
    for (let trial = 0; trial < 5; trial++) {
      const rows = Array.from({ length: 48 }, () => [...Array.from({ length: 5 }, () => 0.01 * z()), 0]);
      expect(probabilityOfBacktestOverfitting(rows, 8).pbo).toBeCloseTo(naivePbo(rows, 8), 15);
    }
  });

  it("is about ½ for skill-less candidates and near 0 when one has real skill (Monte Carlo)", () => {
    const z = seededNormal(6);
    let noise = 0;
    let skill = 0;
    for (let r = 0; r < 200; r++) {
      const rows = Array.from({ length: 160 }, () => Array.from({ length: 10 }, () => 0.01 * z()));
      noise += probabilityOfBacktestOverfitting(rows, 8).pbo;
      // Candidate 0 gets a true per-period Sharpe ratio of 0.5.
      skill += probabilityOfBacktestOverfitting(
        rows.map((row) => [row[0]! + 0.005, ...row.slice(1)]),
        8,
      ).pbo;
    }
    expect(noise / 200).toBeGreaterThan(0.42);
    expect(noise / 200).toBeLessThan(0.58);
    expect(skill / 200).toBeLessThan(0.05);
  });

  it("spreads uneven lengths over the first blocks and uses C(16, 8) splits by default", () => {
    const z = seededNormal(7);
    const rows = Array.from({ length: 37 }, () => [z(), z()]);
    expect(probabilityOfBacktestOverfitting(rows, 4).splits).toBe(6);
    const long = Array.from({ length: 64 }, () => [z(), z(), z()]);
    expect(probabilityOfBacktestOverfitting(long).splits).toBe(12870);
  });

  it("refuses what CSCV cannot split", () => {
    const rows = Array.from({ length: 40 }, (_, t) => [t % 3, t % 5]);
    expect(() => probabilityOfBacktestOverfitting(rows, 3)).toThrow(RangeError);
    expect(() => probabilityOfBacktestOverfitting(rows, 0)).toThrow(RangeError);
    expect(() => probabilityOfBacktestOverfitting(rows.slice(0, 7), 4)).toThrow(RangeError);
    expect(() =>
      probabilityOfBacktestOverfitting(
        rows.map((r) => [r[0]!]),
        4,
      ),
    ).toThrow(RangeError);
    expect(() => probabilityOfBacktestOverfitting([...rows, [1]], 4)).toThrow(RangeError);
    expect(() => probabilityOfBacktestOverfitting([...rows, [1, Number.NaN]], 4)).toThrow(RangeError);
  });
});
