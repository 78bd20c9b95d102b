import { describe, expect, it } from "vitest";
import { positionValue, takenTrade } from "../../../bench/research/accounting.ts";
import type { Candidate } from "../../../bench/research/candidates.ts";
import { carriedForward, tradeFigures } from "../../../bench/research/confidence.ts";
import { COSTS } from "../../../bench/research/walk-forward.ts";

describe("trade figures of the fold-by-fold tables", () => {
  // A long 100 → 110 and a short 100 → 104, filled at closes, after fee 0.1% and slippage 0.03%.
  const closes = [100, 110, 100, 104];
  const trades = [takenTrade(1, 0, 1, closes, COSTS), takenTrade(-1, 2, 3, closes, COSTS)];

  it("gives gross and net per trade, the payoff and the break-even fee per side", () => {
    const f = tradeFigures(trades);
    expect(f.trades).toBe(2);
    expect(f.grossPct).toBeCloseTo((10 - 4) / 2, 12);
    const net = [positionValue(1, 100, 110, COSTS) - 1, positionValue(-1, 100, 104, COSTS) - 1];
    expect(f.netPct).toBeCloseTo(((net[0]! + net[1]!) / 2) * 100, 12);
    expect(f.payoff).toBeCloseTo(net[0]! / -net[1]!, 12);
    // At the break-even fee the mean trade is exactly zero (no slippage).
    const fee = f.breakEvenFeePct! / 100;
    const mean =
      (positionValue(1, 100, 110, { fee, slippage: 0 }) + positionValue(-1, 100, 104, { fee, slippage: 0 })) / 2;
    expect(mean).toBeCloseTo(1, 12);
    // By hand: (1 − f)²·1.1 + (1 − f)(2 − 1.04(1 + f)) = 2 → 2.14f² − 4.2f + 0.06 = 0 → f ≈ 1.4391%.
    expect(f.breakEvenFeePct).toBeCloseTo(((4.2 - Math.sqrt(4.2 ** 2 - 4 * 2.14 * 0.06)) / 4.28) * 100, 8);
  });

  it("has no break-even fee when the trades lose before costs, and no payoff without wins", () => {
    const losing = tradeFigures([takenTrade(1, 0, 1, [100, 95], COSTS)]);
    expect(losing.breakEvenFeePct).toBeNull();
    expect(losing.payoff).toBeNull();
    expect(tradeFigures([takenTrade(1, 0, 1, [100, 105], COSTS)]).payoff).toBe(Infinity);
    expect(tradeFigures([])).toEqual({ trades: 0, grossPct: null, netPct: null, payoff: null, breakEvenFeePct: null });
  });
});

describe("the rule that carries a principled candidate into the pre-registered hold-out", () => {
  const candidate = (name: string, family: string): Candidate => ({ name, family, rule: "", trades: () => [] });
  const measured = (name: string, family: string, sharpe: number, folds: number[]) =>
    ({
      candidate: candidate(name, family),
      summary: { sharpePerPeriod: sharpe },
      foldSharpes: folds,
    }) as unknown as Parameters<typeof carriedForward>[0];
  const served = measured("MS-1", "served", 0.02, [0.1, 0, 0, 0, 0]);

  it("needs a positive Sharpe ratio above MS-1's and at least 3 of 5 folds above MS-1's", () => {
    const carried = carriedForward(served, [
      measured("better on 3 folds", "a", 0.03, [0.2, 0.1, 0.1, -1, -1]),
      measured("better on 2 folds", "b", 0.05, [0.2, 0.1, -1, -1, -1]),
      measured("below MS-1 overall", "a", 0.01, [0.2, 0.1, 0.1, 0.1, 0.1]),
    ]);
    expect(carried).toEqual(["better on 3 folds"]);
    // MS-1 negative: the candidate still needs a positive Sharpe ratio of its own.
    const negativeServed = measured("MS-1", "served", -0.05, [-1, -1, -1, -1, -1]);
    expect(
      carriedForward(negativeServed, [
        measured("less bad", "a", -0.01, [0, 0, 0, 0, 0]),
        measured("positive", "b", 0.01, [0, 0, 0, 0, 0]),
      ]),
    ).toEqual(["positive"]);
  });

  it("lets only the best momentum look-back through", () => {
    const carried = carriedForward(served, [
      measured("1 week", "c", 0.04, [1, 1, 1, 1, 1]),
      measured("4 weeks", "c", 0.05, [1, 1, 1, -1, -1]),
    ]);
    expect(carried).toEqual(["4 weeks"]);
  });
});
