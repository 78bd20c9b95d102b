/**
 * The backtest on hand-made trades with numbers checkable by hand (docs/track-record.md): one
 * position at a time, compounding after a fee per side, the marked equity curve against
 * buy-and-hold over the same period, maximum drawdown, and the fee parameter's validation.
 */
import { describe, expect, it } from "vitest";
import {
  ALLOWED_FEES_PCT,
  type CloseSeries,
  DEFAULT_FEE_PCT,
  maxDrawdownPct,
  nearestAllowedFee,
  netResultPct,
  parseFeePct,
  runBacktest,
} from "../../../src/track-record/backtest.ts";
import { type ChartData, ChartDataCache } from "../../../src/track-record/chart-data.ts";
import { computeTrackRecord, type TrackCandle, type TrackEvent } from "../../../src/track-record/track-record.ts";

const H = 3_600_000;
const t = (i: number) => Date.UTC(2024, 0, 1) + i * H;

function candles(...values: number[]): TrackCandle[] {
  return values.map((close, i) => ({ openTime: t(i), close }));
}

function series(...values: number[]): CloseSeries {
  return { times: values.map((_, i) => t(i)), closes: values };
}

function ev(signal: TrackEvent["signal"], at: number, price: number, defense: number | null = null): TrackEvent {
  return { signal, candleOpenTime: t(at), price, defense };
}

/** Trades of these events over these closes, and the backtest at a fee. */
function backtest(events: TrackEvent[], closes: number[], feePct: number) {
  return runBacktest(computeTrackRecord(events, candles(...closes)).trades, series(...closes), feePct);
}

describe("fees", () => {
  it("a trade pays the fee on entry and on exit: +10% at 1% per side is 1.1 × 0.99 × 0.99 − 1 = +7.811%", () => {
    expect(netResultPct(10, 1)).toBeCloseTo(7.811, 10);
    expect(netResultPct(10, 0)).toBeCloseTo(10, 12);
    expect(netResultPct(0, 0.1)).toBeCloseTo((0.999 * 0.999 - 1) * 100, 12); // −0.1999%: a flat trade loses both fees
  });

  it("compounds the closed trades: +10% then −10% then 0% is −1% without fees", () => {
    const bt = backtest(
      [ev("LONG", 0, 100, 90), ev("SHORT", 1, 110, 130), ev("LONG", 2, 121, 100), ev("NONE", 3, 121)],
      [100, 110, 121, 121],
      0,
    );
    expect(bt).toMatchObject({ trades: 3, wins: 1, openTrade: null });
    expect(bt.totalPct).toBeCloseTo(-1, 10);
    expect(bt.avgResultPct).toBeCloseTo(0, 10);
    expect(bt.winRatePct).toBeCloseTo(100 / 3, 10);
  });

  it("with a fee: longs keep (1 − f)²·X/E, the short (1 − f)·(2 − (1 + f)·X/E); the flat third trade is a loss", () => {
    const bt = backtest(
      [ev("LONG", 0, 100, 90), ev("SHORT", 1, 110, 130), ev("LONG", 2, 121, 100), ev("NONE", 3, 121)],
      [100, 110, 121, 121],
      0.1,
    );
    expect(bt.feePct).toBe(0.1);
    expect(bt.wins).toBe(1);
    const short = 0.999 * (2 - 1.001 * (121 / 110)); // 0.89800..., not 0.9 × 0.999² = 0.89820...
    expect(bt.totalPct).toBeCloseTo((1.1 * 0.999 ** 2 * short * 0.999 ** 2 - 1) * 100, 10);
    expect(bt.avgResultPct).toBeCloseTo(
      (netResultPct(10, 0.1) + netResultPct(-10, 0.1, -1) + netResultPct(0, 0.1)) / 3,
      10,
    );
  });

  it(
    "a short pays the exit fee on the buy-back: +10% at 1% per side is " +
      "0.99 × (2 − 1.01 × 0.9) − 1 = +8.009%, as the research counts it",
    () => {
      expect(netResultPct(10, 1, -1)).toBeCloseTo(8.009, 10);
      expect(netResultPct(-10, 1, -1)).toBeCloseTo((0.99 * (2 - 1.01 * 1.1) - 1) * 100, 10);
      expect(netResultPct(0, 0, -1)).toBeCloseTo(0, 12);
    },
  );

  it("a short that more than doubles against it loses its stake and no more (−100%)", () => {
    expect(netResultPct(-150, 0.1, -1)).toBe(-100);
  });
});

describe("positions", () => {
  it(
    "holds one position at a time: a reversal is taken, a " + "same-direction signal inside a held trade is skipped",
    () => {
      const events = [ev("LONG", 0, 100, 90), ev("STRONG_LONG", 1, 110, 100), ev("SHORT", 3, 95, 105)];
      const bt = backtest(events, [100, 110, 99, 95, 94], 0);
      // LONG 100 → 95 at the SHORT (taken, −5%); STRONG_LONG entered while LONG was held (skipped);
      // SHORT entered at the LONG's exit (taken) and still open.
      expect(bt.trades).toBe(1);
      expect(bt.totalPct).toBeCloseTo(-5, 12);
      expect(bt.openTrade).toMatchObject({ signal: "SHORT", entryPrice: 95, exitReason: "open" });
    },
  );

  it("after a defense exit, the next signal in the same direction is a new position", () => {
    const bt = backtest([ev("LONG", 0, 100, 95), ev("LONG", 3, 96, 90), ev("NONE", 4, 99)], [100, 94, 95, 96, 99], 0);
    expect(bt.trades).toBe(2);
    expect(bt.totalPct).toBeCloseTo((0.94 * (99 / 96) - 1) * 100, 10);
  });

  it("is empty with no closed trade", () => {
    const bt = backtest([], [1, 2, 3], 0.1);
    expect(bt).toMatchObject({
      trades: 0,
      totalPct: null,
      buyHoldPct: null,
      maxDrawdownPct: null,
      curve: [],
      from: null,
      openTrade: null,
    });
  });
});

describe("equity curve, buy-and-hold and drawdown", () => {
  // A long at 100 (close 0) out at the NONE at 120 (close 3); a short at 120 (close 4) out at its defense 130 (close
  // 5); then flat.
  const events = [ev("LONG", 0, 100), ev("NONE", 3, 120), ev("SHORT", 4, 120, 130)];
  const closes = [100, 80, 110, 120, 120, 130, 150];

  it(
    "marks a held position at each close and stays flat when out; " +
      "buy-and-hold runs from the first entry to the last close",
    () => {
      const bt = backtest(events, closes, 0);
      expect(bt.curve.map((p) => p.strategy)).toEqual(
        [1, 0.8, 1.1, 1.2, 1.2, 1.2 * (1 - 10 / 120), 1.2 * (1 - 10 / 120)].map((v) => expect.closeTo(v, 12)),
      );
      expect(bt.curve.map((p) => p.buyHold)).toEqual(
        [1, 0.8, 1.1, 1.2, 1.2, 1.3, 1.5].map((v) => expect.closeTo(v, 12)),
      );
      expect(bt.totalPct).toBeCloseTo(10, 10); // 1.2 × 110/120 = 1.1
      expect(bt.buyHoldPct).toBeCloseTo(50, 10);
      expect(bt.from).toBe(t(0));
      expect(bt.to).toBe(t(6));
      // Strategy: from the peak 1.0 down to 0.8 is 20% (the later fall from 1.2 to 1.1 is only 8.33%); buy-and-hold
      // also
      // 20%.
      expect(bt.maxDrawdownPct).toBeCloseTo(20, 10);
      expect(bt.buyHoldMaxDrawdownPct).toBeCloseTo(20, 10);
    },
  );

  it(
    "with a fee the curve pays the entry fee while held and " + "both fees once out; buy-and-hold pays one each way",
    () => {
      const f = 0.01; // 1% per side
      const bt = backtest(events, closes, 1);
      const first = 1.2 * (1 - f) ** 2;
      expect(bt.curve[0]!.strategy).toBeCloseTo(1 - f, 12);
      expect(bt.curve[1]!.strategy).toBeCloseTo(0.8 * (1 - f), 12);
      expect(bt.curve[3]!.strategy).toBeCloseTo(first, 12);
      // The short 120 → 130 pays its exit fee on the buy-back: (1 − f)·(2 − (1 + f)·130/120).
      const short = (1 - f) * (2 - (1 + f) * (130 / 120));
      expect(bt.curve[6]!.strategy).toBeCloseTo(first * short, 12);
      expect(bt.totalPct).toBeCloseTo((first * short - 1) * 100, 10);
      expect(bt.buyHoldPct).toBeCloseTo((1.5 * (1 - f) ** 2 - 1) * 100, 10);
    },
  );

  it("maximum drawdown is the largest fall from an earlier peak", () => {
    expect(maxDrawdownPct([1, 2, 1.5, 3, 1.5, 2])).toBeCloseTo(50, 12);
    expect(maxDrawdownPct([1, 1.1, 1.2])).toBe(0);
    expect(maxDrawdownPct([])).toBe(0);
  });
});

describe("fee parameter", () => {
  it(`defaults to ${DEFAULT_FEE_PCT}% and accepts the allowed fees as they are`, () => {
    expect(parseFeePct(undefined)).toEqual({ ok: true, feePct: 0.1, exact: true });
    expect(parseFeePct("")).toEqual({ ok: true, feePct: 0.1, exact: true });
    for (const fee of ALLOWED_FEES_PCT)
      expect(parseFeePct(String(fee))).toEqual({ ok: true, feePct: fee, exact: true });
    expect(parseFeePct("0.0750")).toEqual({ ok: true, feePct: 0.075, exact: true });
    expect(parseFeePct("1")).toEqual({ ok: true, feePct: 1, exact: true });
  });

  // Issue 23, item 11: a readable fee outside the set is the nearest allowed one, so the
  // number of distinct backtests per series is the size of the set, whatever is asked.
  it("turns any other fee from 0 to 1 into the nearest allowed one (ties to the lower)", () => {
    expect(parseFeePct("0.13")).toEqual({ ok: true, feePct: 0.1, exact: false });
    expect(parseFeePct("0.15")).toEqual({ ok: true, feePct: 0.1, exact: false });
    expect(parseFeePct("0.1501")).toEqual({ ok: true, feePct: 0.2, exact: false });
    expect(parseFeePct("0.0001")).toEqual({ ok: true, feePct: 0, exact: false });
    expect(parseFeePct("0.99")).toEqual({ ok: true, feePct: 1, exact: false });
    expect(parseFeePct("0.7")).toEqual({ ok: true, feePct: 0.5, exact: false });
    const distinct = new Set<number>();
    for (let i = 0; i <= 10_000; i++) {
      const parsed = parseFeePct((i / 10_000).toFixed(4));
      if (!parsed.ok) throw new Error(`refused ${i}`);
      distinct.add(parsed.feePct);
    }
    expect([...distinct].sort((a, b) => a - b)).toEqual([...ALLOWED_FEES_PCT]);
    expect(nearestAllowedFee(0.3)).toBe(0.25);
  });

  it("refuses anything else with a message naming the bounds", () => {
    for (const bad of ["-0.1", "1.01", "5", "abc", "0.1.1", "1e-2", "NaN", "Infinity", "0x1", "0.12345", " 0,1"]) {
      const parsed = parseFeePct(bad);
      expect(parsed.ok, bad).toBe(false);
      if (!parsed.ok) expect(parsed.message).toMatch(/from 0 to 1/);
    }
  });
});

describe("backtests per fee in the chart data cache (issue 23, item 11)", () => {
  it("computes each allowed fee once per series copy, keeps them all, and computes no other fee", () => {
    const closes: CloseSeries = { times: [0, 1, 2, 3], closes: [100, 110, 105, 120] };
    const data = {
      record: { trades: [] },
      closes,
      backtest: runBacktest([], closes, DEFAULT_FEE_PCT),
    } as unknown as ChartData;
    const cache = new ChartDataCache(null as never);
    const first = ALLOWED_FEES_PCT.map((fee) => cache.backtestAt(data, fee));
    // A second round (and a third) returns the very same results: nothing recomputed, nothing evicted.
    for (let round = 0; round < 2; round++) {
      for (const [i, fee] of ALLOWED_FEES_PCT.entries()) expect(cache.backtestAt(data, fee)).toBe(first[i]);
    }
    expect(first.map((r) => r.feePct)).toEqual([...ALLOWED_FEES_PCT]);
    expect(() => cache.backtestAt(data, 0.13)).toThrow(/not one of the allowed fees/);
  });
});
