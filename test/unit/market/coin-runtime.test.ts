/**
 * CoinRuntime, the pure in-memory market of one coin: higher timeframes built from the base one
 * (1h → 4h, 1d; 15m → 30m, 1h, 4h, 1d) on UTC boundaries, derived readings equal to the engine
 * run on independently aggregated candles, forming updates that never touch the closed state,
 * implicit closes, duplicates / out-of-order updates, and gaps.
 */
import { describe, expect, it } from "vitest";
import {
  type Candle,
  type EngineState,
  type Reading,
  readClosed,
  readForming,
  runSeries,
} from "../../../src/engine/index.ts";
import { type CandleRow, CoinRuntime } from "../../../src/market/coin-runtime.ts";
import { prng } from "../../../src/market/demo-feed.ts";
import type { Timeframe } from "../../../src/market/timeframes.ts";
import type { ValidUpdate } from "../../../src/market/validate.ts";

const MIN = 60_000;
const H = 60 * MIN;
const TF_MS: Record<Timeframe, number> = { "15m": 15 * MIN, "30m": 30 * MIN, "1h": H, "4h": 4 * H, "1d": 24 * H };
const DERIVED: Record<"15m" | "1h", Timeframe[]> = { "15m": ["30m", "1h", "4h", "1d"], "1h": ["4h", "1d"] };

// ------------------------------------------------------------------------------------------
// Test-side reference: a small aggregator written independently of src/market.
// ------------------------------------------------------------------------------------------

interface Aggregated {
  /** Buckets whose last base candle arrived, or that a later bucket's candle ended (gaps). */
  closed: Candle[];
  /** The last bucket when its last base candle has not arrived yet, else null. */
  partial: Candle | null;
  /** How many closed buckets lack their last base candle (closed by a later bucket). */
  endedByGap: number;
}

/**
 * Groups base candles (time order) into UTC buckets of `tfMs`: first open, max high, min low, last close, summed
 * volume.
 */
function aggregate(base: readonly Candle[], baseMs: number, tfMs: number): Aggregated {
  const groups: Candle[][] = [];
  for (const c of base) {
    const start = c.openTime - (c.openTime % tfMs);
    const last = groups[groups.length - 1];
    if (last && last[0]!.openTime - (last[0]!.openTime % tfMs) === start) last.push(c);
    else groups.push([c]);
  }
  const toCandle = (g: Candle[]): Candle => {
    let high = -Infinity;
    let low = Infinity;
    let volume = 0;
    for (const c of g) {
      high = Math.max(high, c.high);
      low = Math.min(low, c.low);
      volume += c.volume;
    }
    const first = g[0]!;
    return {
      openTime: first.openTime - (first.openTime % tfMs),
      open: first.open,
      high,
      low,
      close: g[g.length - 1]!.close,
      volume,
    };
  };
  const complete = (g: Candle[]) => {
    const start = g[0]!.openTime - (g[0]!.openTime % tfMs);
    return g[g.length - 1]!.openTime === start + tfMs - baseMs;
  };
  const closed = groups.map(toCandle);
  let partial: Candle | null = null;
  if (groups.length > 0 && !complete(groups[groups.length - 1]!)) partial = closed.pop()!;
  const endedByGap = groups.slice(0, closed.length).filter((g) => !complete(g)).length;
  return { closed, partial, endedByGap };
}

/** The reading the spec prescribes for closed candles plus an optional forming one; none before 14 closed candles. */
function expectedReading(closed: readonly Candle[], forming: Candle | null): Reading | null {
  const state = runSeries(closed);
  if (closed.length < 14) return null;
  return forming ? readForming(state, forming) : readClosed(state);
}

/** A random walk of valid base candles from `start`, skipping some slots when gapRate > 0. */
function walk(seed: number, count: number, baseMs: number, start: number, gapRate = 0): Candle[] {
  const rand = prng(seed);
  const out: Candle[] = [];
  let price = 1_000 + rand() * 1_000;
  let t = start;
  while (out.length < count) {
    const open = price;
    const close = Math.max(1, open * (1 + (rand() - 0.5) * 0.04));
    const high = Math.max(open, close) * (1 + rand() * 0.01);
    const low = Math.min(open, close) * (1 - rand() * 0.01);
    price = close;
    if (!(gapRate > 0 && rand() < gapRate))
      out.push({ openTime: t, open, high, low, close, volume: Math.round(rand() * 1_000) / 8 });
    t += baseMs;
  }
  return out;
}

const update = (c: Candle, closed: boolean, tf: Timeframe = "1h", symbol = "TEST"): ValidUpdate => ({
  symbol,
  tf,
  closed,
  ...c,
});

/** A runtime plus every row it asked to persist. */
function runtime(baseTf: Timeframe) {
  const coin = new CoinRuntime("TEST", baseTf, 0);
  const rows: CandleRow[] = [];
  return {
    coin,
    rows,
    apply(c: Candle, closed: boolean) {
      return coin.apply(update(c, closed, baseTf), rows);
    },
    state(tf: Timeframe): EngineState {
      return coin.series.get(tf)!.state;
    },
    /** Every engine state, deep-copied. */
    snapshot(): Record<string, EngineState> {
      return structuredClone(Object.fromEntries([...coin.series].map(([tf, s]) => [tf, s.state])));
    },
    /** The stored picture after upserting every row in order: closed rows and forming rows per tf. */
    stored(tf: Timeframe): { closed: Candle[]; forming: Candle[] } {
      const byTime = new Map<number, CandleRow>();
      for (const r of rows) if (r.tf === tf) byTime.set(r.openTime, r);
      const sorted = [...byTime.values()].sort((a, b) => a.openTime - b.openTime);
      const strip = ({ openTime, open, high, low, close, volume }: CandleRow): Candle => ({
        openTime,
        open,
        high,
        low,
        close,
        volume,
      });
      return { closed: sorted.filter((r) => r.closed).map(strip), forming: sorted.filter((r) => !r.closed).map(strip) };
    },
  };
}

/** Checks every derived series of `rt` against the reference aggregation of `base`. */
function expectMatchesReference(rt: ReturnType<typeof runtime>, baseTf: "15m" | "1h", base: readonly Candle[]) {
  expect(rt.state(baseTf)).toEqual(runSeries(base));
  expect(rt.coin.reading(baseTf)).toEqual(expectedReading(base, null));
  for (const tf of DERIVED[baseTf]) {
    const agg = aggregate(base, TF_MS[baseTf], TF_MS[tf]);
    expect(rt.state(tf), `${tf} state`).toEqual(runSeries(agg.closed));
    expect(rt.coin.series.get(tf)!.forming, `${tf} forming`).toEqual(agg.partial);
    expect(rt.coin.reading(tf), `${tf} reading`).toEqual(expectedReading(agg.closed, agg.partial));
    const stored = rt.stored(tf);
    expect(stored.closed, `${tf} closed rows`).toEqual(agg.closed);
    // The only forming row left unclosed is the current partial bucket.
    expect(stored.forming, `${tf} forming rows`).toEqual(agg.partial ? [agg.partial] : []);
  }
}

describe("1h base: 4h and 1d candles", () => {
  it("are built on UTC boundaries and close exactly when the bucket's last 1h candle closes", () => {
    // 2024-03-10 22:00 UTC .. 2024-03-11 05:00 UTC: a 4h bucket at 20:00 with two candles, a 1d
    // bucket of 2024-03-10 with two candles, then a full 4h bucket at 00:00.
    const start = Date.UTC(2024, 2, 10, 22);
    const c = (i: number, o: number, h: number, l: number, cl: number, v: number): Candle => ({
      openTime: start + i * H,
      open: o,
      high: h,
      low: l,
      close: cl,
      volume: v,
    });
    const candles = [
      c(0, 100, 104, 99, 103, 1),
      c(1, 103, 108, 101, 102, 2),
      c(2, 102, 103, 90, 95, 4),
      c(3, 95, 120, 94, 118, 8),
      c(4, 118, 119, 110, 111, 16),
      c(5, 111, 115, 109, 114, 32),
      c(6, 114, 116, 112, 113, 64),
    ];
    const rt = runtime("1h");

    rt.apply(candles[0]!, true);
    expect(rt.state("4h").count).toBe(0);
    expect(rt.coin.series.get("4h")!.forming).toEqual({
      openTime: Date.UTC(2024, 2, 10, 20),
      open: 100,
      high: 104,
      low: 99,
      close: 103,
      volume: 1,
    });
    expect(rt.coin.series.get("1d")!.forming).toEqual({
      openTime: Date.UTC(2024, 2, 10),
      open: 100,
      high: 104,
      low: 99,
      close: 103,
      volume: 1,
    });

    rt.apply(candles[1]!, true); // 23:00 is the last hour of both the 20:00 4h bucket and the day
    const day10 = { openTime: Date.UTC(2024, 2, 10), open: 100, high: 108, low: 99, close: 102, volume: 3 };
    expect(rt.stored("4h").closed).toEqual([{ ...day10, openTime: Date.UTC(2024, 2, 10, 20) }]);
    expect(rt.stored("1d").closed).toEqual([day10]);
    expect(rt.state("4h")).toMatchObject({ count: 1, lastOpenTime: Date.UTC(2024, 2, 10, 20), lastClose: 102 });
    expect(rt.state("1d")).toMatchObject({ count: 1, lastOpenTime: Date.UTC(2024, 2, 10), lastClose: 102 });
    expect(rt.coin.series.get("4h")!.forming).toBeNull();

    for (const i of [2, 3, 4]) {
      rt.apply(candles[i]!, true);
      expect(rt.state("4h").count, `after ${i}`).toBe(1);
    }
    expect(rt.coin.series.get("4h")!.forming).toEqual({
      openTime: Date.UTC(2024, 2, 11, 0),
      open: 102,
      high: 120,
      low: 90,
      close: 111,
      volume: 28,
    });
    // A forming 03:00 update is not the close of 03:00: the bucket stays open.
    rt.apply(candles[5]!, false);
    expect(rt.state("4h").count).toBe(1);
    rt.apply(candles[5]!, true);
    expect(rt.state("4h")).toMatchObject({ count: 2, lastOpenTime: Date.UTC(2024, 2, 11, 0), lastClose: 114 });
    expect(rt.stored("4h").closed[1]).toEqual({
      openTime: Date.UTC(2024, 2, 11, 0),
      open: 102,
      high: 120,
      low: 90,
      close: 114,
      volume: 60,
    });
    expect(rt.state("1d").count).toBe(1);

    rt.apply(candles[6]!, true);
    expectMatchesReference(rt, "1h", candles);
  });

  it("equal the engine run on independently aggregated candles (several random series)", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      // Starts mid-day at an odd hour, so the first 4h and 1d buckets are partial.
      const base = walk(seed, 600 + seed * 37, H, Date.UTC(2023, 5, 1, 13));
      const rt = runtime("1h");
      for (const c of base) expect(rt.apply(c, true)).toBe("accepted");
      expectMatchesReference(rt, "1h", base);
      expect(runSeries(aggregate(base, H, 4 * H).closed).count).toBeGreaterThan(100);
    }
  });

  it(
    "after gaps, including a missing last hour of a bucket, still " +
      "close the bucket when a later bucket's candle arrives",
    () => {
      const start = Date.UTC(2024, 0, 1);
      const at = (hour: number, price: number): Candle => ({
        openTime: start + hour * H,
        open: price,
        high: price + 2,
        low: price - 1,
        close: price + 1,
        volume: hour,
      });
      const rt = runtime("1h");
      for (const h of [0, 1, 2]) rt.apply(at(h, 100 + h), true); // 03:00 never comes
      expect(rt.state("4h").count).toBe(0);
      rt.apply(at(5, 200), true); // the next bucket ends the 00:00 one
      expect(rt.stored("4h").closed).toEqual([
        { openTime: start, open: 100, high: 104, low: 99, close: 103, volume: 3 },
      ]);
      expect(rt.coin.series.get("4h")!.forming).toEqual({
        openTime: start + 4 * H,
        open: 200,
        high: 202,
        low: 199,
        close: 201,
        volume: 5,
      });

      // A forming candle of a later bucket ends the partial bucket too (here 04:00-07:00 ends at 09:00).
      rt.apply(at(9, 300), false);
      expect(rt.stored("4h").closed.map((c) => c.openTime)).toEqual([start, start + 4 * H]);
      expect(rt.stored("4h").closed[1]).toEqual({
        openTime: start + 4 * H,
        open: 200,
        high: 202,
        low: 199,
        close: 201,
        volume: 5,
      });
      expect(rt.coin.series.get("4h")!.forming).toEqual({
        openTime: start + 8 * H,
        open: 300,
        high: 302,
        low: 299,
        close: 301,
        volume: 9,
      });
      // The day is still open: all of it is 2024-01-01.
      expect(rt.state("1d").count).toBe(0);
      // A whole missing day: the first candle of 2024-01-03 closes 2024-01-01.
      rt.apply(at(9, 300), true);
      rt.apply(at(48 + 1, 400), true);
      expect(rt.stored("1d").closed).toEqual([
        { openTime: start, open: 100, high: 302, low: 99, close: 301, volume: 0 + 1 + 2 + 5 + 9 },
      ]);
    },
  );

  it("with random gaps equal the engine run on the reference aggregation", () => {
    let endedByGap = 0;
    for (const seed of [11, 12, 13]) {
      const base = walk(seed, 800, H, Date.UTC(2022, 11, 30, 7), 0.15);
      const rt = runtime("1h");
      for (const c of base) rt.apply(c, true);
      expectMatchesReference(rt, "1h", base);
      endedByGap += aggregate(base, H, 4 * H).endedByGap + aggregate(base, H, 24 * H).endedByGap;
    }
    // The series really exercised buckets whose last hour was missing.
    expect(endedByGap).toBeGreaterThan(50);
  });
});

describe("15m base: 30m, 1h, 4h and 1d candles", () => {
  it("close on the 15m candle that ends each bucket (xx:15 for 30m, xx:45 for 1h, 03:45 for 4h, 23:45 for 1d)", () => {
    const start = Date.UTC(2025, 6, 31, 23, 30); // 23:30 UTC, the last half hour of a day
    const candles = walk(7, 18, 15 * MIN, start); // 23:30 .. 03:45
    const rt = runtime("15m");
    const countsAfter: Array<Record<string, number>> = [];
    for (const c of candles) {
      rt.apply(c, true);
      countsAfter.push(Object.fromEntries(DERIVED["15m"].map((tf) => [tf, rt.state(tf).count])));
    }
    // 23:30 → 23:45 closes the 23:30 30m bucket, the 23:00 1h bucket (partial), the 20:00 4h and the day.
    expect(countsAfter[0]).toEqual({ "30m": 0, "1h": 0, "4h": 0, "1d": 0 });
    expect(countsAfter[1]).toEqual({ "30m": 1, "1h": 1, "4h": 1, "1d": 1 });
    expect(countsAfter[2]).toEqual({ "30m": 1, "1h": 1, "4h": 1, "1d": 1 }); // 00:00
    expect(countsAfter[3]).toEqual({ "30m": 2, "1h": 1, "4h": 1, "1d": 1 }); // 00:15 ends 00:00-00:30
    expect(countsAfter[5]).toEqual({ "30m": 3, "1h": 2, "4h": 1, "1d": 1 }); // 00:45 ends the 00:00 hour
    expect(countsAfter[17]).toEqual({ "30m": 9, "1h": 5, "4h": 2, "1d": 1 }); // 03:45 ends the 00:00 4h bucket
    expect(rt.stored("4h").closed.map((c) => new Date(c.openTime).toISOString())).toEqual([
      "2025-07-31T20:00:00.000Z",
      "2025-08-01T00:00:00.000Z",
    ]);
    expect(rt.stored("1d").closed.map((c) => new Date(c.openTime).toISOString())).toEqual(["2025-07-31T00:00:00.000Z"]);
    expectMatchesReference(rt, "15m", candles);
  });

  it("equal the engine run on independently aggregated candles, with and without gaps", () => {
    for (const [seed, gapRate] of [
      [21, 0],
      [22, 0],
      [23, 0.2],
    ] as const) {
      const base = walk(seed, 3_000, 15 * MIN, Date.UTC(2024, 1, 28, 21, 45), gapRate);
      const rt = runtime("15m");
      for (const c of base) expect(rt.apply(c, true)).toBe("accepted");
      expectMatchesReference(rt, "15m", base);
      expect(rt.state("1d").count).toBeGreaterThan(14);
    }
  });
});

describe("forming updates", () => {
  it("replace each other and never change any closed state; the final readings equal a run without them", () => {
    for (const baseTf of ["1h", "15m"] as const) {
      // No gaps here: a forming candle of a later bucket legitimately ends a gapped bucket (tested above).
      const base = walk(31, 400, TF_MS[baseTf], Date.UTC(2024, 4, 5, 2));
      const rand = prng(99);
      const withForming = runtime(baseTf);
      const plain = runtime(baseTf);
      for (const c of base) {
        // Two or three forming versions of c, each a plausible part of the final candle.
        const versions = 2 + Math.floor(rand() * 2);
        for (let v = 0; v < versions; v++) {
          const before = withForming.snapshot();
          const close = c.low + (c.high - c.low) * rand();
          const forming: Candle = {
            ...c,
            close,
            high: Math.max(c.open, close),
            low: Math.min(c.open, close),
            volume: c.volume * rand(),
          };
          expect(withForming.apply(forming, false)).toBe("accepted");
          expect(withForming.snapshot()).toEqual(before);
          expect(withForming.coin.series.get(baseTf)!.forming).toEqual(forming);
          const baseState = withForming.state(baseTf);
          expect(withForming.coin.reading(baseTf)).toEqual(
            baseState.count >= 14 ? readForming(baseState, forming) : null,
          );
        }
        withForming.apply(c, true);
        plain.apply(c, true);
      }
      expect(withForming.snapshot()).toEqual(plain.snapshot());
      for (const tf of [baseTf, ...DERIVED[baseTf]]) {
        expect(withForming.coin.reading(tf), tf).toEqual(plain.coin.reading(tf));
        expect(withForming.stored(tf), tf).toEqual(plain.stored(tf));
      }
      expectMatchesReference(withForming, baseTf, base);
    }
  });

  it("of the same hour replace the previous one inside the derived forming candle too", () => {
    const start = Date.UTC(2024, 0, 1);
    const rt = runtime("1h");
    rt.apply({ openTime: start, open: 10, high: 11, low: 9, close: 10.5, volume: 1 }, true);
    rt.apply({ openTime: start + H, open: 10.5, high: 20, low: 10, close: 19, volume: 5 }, false);
    rt.apply({ openTime: start + H, open: 10.5, high: 12, low: 8, close: 8.5, volume: 3 }, false);
    // The 20 high of the first forming version is gone: it never happened in the final candle.
    expect(rt.coin.series.get("4h")!.forming).toEqual({
      openTime: start,
      open: 10,
      high: 12,
      low: 8,
      close: 8.5,
      volume: 4,
    });
    expect(rt.coin.series.get("4h")!.partial).toEqual({
      openTime: start,
      open: 10,
      high: 11,
      low: 9,
      close: 10.5,
      volume: 1,
    });
    expect(rt.stored("4h").forming).toEqual([{ openTime: start, open: 10, high: 12, low: 8, close: 8.5, volume: 4 }]);
    expect(rt.stored("1h").forming).toEqual([
      { openTime: start + H, open: 10.5, high: 12, low: 8, close: 8.5, volume: 3 },
    ]);
  });

  it("are implicitly closed by a newer candle, with the last forming values", () => {
    const base = walk(41, 400, H, Date.UTC(2024, 8, 1, 1));
    const rt = runtime("1h");
    // Only forming updates: each newer hour closes the previous one as last seen.
    for (const c of base) expect(rt.apply(c, false)).toBe("accepted");
    const closed = base.slice(0, -1);
    expect(rt.state("1h")).toEqual(runSeries(closed));
    expect(rt.coin.series.get("1h")!.forming).toEqual(base[base.length - 1]);
    expect(rt.coin.reading("1h")).toEqual(readForming(runSeries(closed), base[base.length - 1]!));
    expect(rt.stored("1h").closed).toEqual(closed);
    for (const tf of DERIVED["1h"]) {
      const agg = aggregate(closed, H, TF_MS[tf]);
      expect(rt.state(tf), tf).toEqual(runSeries(agg.closed));
      const last = base[base.length - 1]!;
      const bucket = last.openTime - (last.openTime % TF_MS[tf]);
      const formingAgg = aggregate([...closed.filter((c) => c.openTime >= bucket), last], H, TF_MS[tf]);
      const expectedForming = formingAgg.partial ?? formingAgg.closed[0]!;
      expect(formingAgg.closed.length + (formingAgg.partial ? 1 : 0)).toBe(1);
      expect(rt.coin.series.get(tf)!.forming, tf).toEqual(expectedForming);
      expect(agg.closed.length).toBeGreaterThanOrEqual(14);
      expect(rt.coin.reading(tf), tf).toEqual(readForming(runSeries(agg.closed), expectedForming));
    }
  });

  it(
    "a forming candle that breaks the swing high is unconfirmed " +
      "until it closes, and closing it confirms the same signal",
    () => {
      // Highs rise to a pivot at index 10, fall away; the forming candle then closes above it.
      const start = Date.UTC(2024, 0, 1);
      const closes = [
        100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 108, 106, 104, 102, 101, 100, 99, 100, 101,
      ];
      const candles = closes.map(
        (close, i): Candle => ({
          openTime: start + i * H,
          open: close,
          high: close + 0.5,
          low: close - 0.5,
          close,
          volume: 1,
        }),
      );
      const rt = runtime("1h");
      for (const c of candles) rt.apply(c, true);
      const state = rt.state("1h");
      expect(state).toMatchObject({ swingHigh: 110.5, swingHighBroken: false });
      const breaker: Candle = { openTime: start + 20 * H, open: 101, high: 112, low: 100.8, close: 111.5, volume: 3 };
      rt.apply(breaker, false);
      const forming = rt.coin.reading("1h")!;
      expect(forming).toMatchObject({ price: 111.5, signal: "LONG", confirmed: false });
      expect(readClosed(rt.state("1h"))!.signal).not.toBe("LONG");
      rt.apply(breaker, true);
      expect(rt.coin.reading("1h")).toMatchObject({
        price: 111.5,
        signal: "LONG",
        confirmed: true,
        defense: forming.defense,
      });
    },
  );
});

describe("readings before 14 closed candles", () => {
  it(
    "are absent (no_data) on every timeframe, with or without a " +
      "forming candle; the 14th close gives the engine's reading",
    () => {
      const base = walk(61, 15, H, Date.UTC(2024, 6, 1, 0));
      const rt = runtime("1h");
      for (let i = 0; i < 13; i++) {
        rt.apply(base[i]!, true);
        expect(rt.coin.reading("1h"), `after ${i + 1}`).toBeNull();
      }
      // ATR(14) over 13 closed candles plus the forming one would exist, but a forming candle is not history.
      rt.apply(base[13]!, false);
      expect(rt.coin.reading("1h")).toBeNull();
      rt.apply(base[13]!, true);
      expect(rt.coin.reading("1h")).toEqual(readClosed(runSeries(base.slice(0, 14))));
      expect(rt.coin.reading("1h")!.atrPct).not.toBeNull();
      rt.apply(base[14]!, false);
      expect(rt.coin.reading("1h")).toEqual(readForming(runSeries(base.slice(0, 14)), base[14]!));
      // 4h: 3 closed buckets and a partial one.
      expect(rt.state("4h").count).toBe(3);
      expect(rt.coin.reading("4h")).toBeNull();
      expect(rt.coin.reading("1d")).toBeNull();
    },
  );
});

describe("updates at or before the history", () => {
  function primed() {
    const base = walk(51, 30, H, Date.UTC(2024, 3, 1, 0));
    const rt = runtime("1h");
    for (const c of base) rt.apply(c, true);
    return { rt, base, last: base[base.length - 1]! };
  }

  it("a closed candle at or before the last closed one is a duplicate and changes nothing", () => {
    const { rt, base, last } = primed();
    const before = rt.snapshot();
    const versions = [...rt.coin.series.values()].map((s) => s.version);
    const rowsBefore = rt.rows.length;
    expect(rt.apply(last, true)).toBe("duplicate");
    expect(rt.apply({ ...last, close: last.low }, true)).toBe("duplicate"); // a different value is still history
    expect(rt.apply(base[3]!, true)).toBe("duplicate");
    expect(rt.snapshot()).toEqual(before);
    expect([...rt.coin.series.values()].map((s) => s.version)).toEqual(versions);
    expect(rt.rows).toHaveLength(rowsBefore);
  });

  it("a forming candle at or before the last closed one is out of order and changes nothing", () => {
    const { rt, base, last } = primed();
    const before = rt.snapshot();
    const rowsBefore = rt.rows.length;
    expect(rt.apply(last, false)).toBe("out_of_order");
    expect(rt.apply(base[0]!, false)).toBe("out_of_order");
    expect(rt.snapshot()).toEqual(before);
    expect(rt.rows).toHaveLength(rowsBefore);
    expect(rt.coin.series.get("1h")!.forming).toBeNull();
  });

  it("a candle older than the current forming one is out of order and leaves the forming candle in place", () => {
    const { rt, last } = primed();
    const forming: Candle = { ...last, openTime: last.openTime + 2 * H };
    rt.apply(forming, false);
    const before = rt.snapshot();
    const derivedForming = rt.coin.series.get("4h")!.forming;
    const rowsBefore = rt.rows.length;
    const between: Candle = { ...last, openTime: last.openTime + H };
    expect(rt.apply(between, true)).toBe("out_of_order");
    expect(rt.apply(between, false)).toBe("out_of_order");
    expect(rt.snapshot()).toEqual(before);
    expect(rt.rows).toHaveLength(rowsBefore);
    expect(rt.coin.series.get("1h")!.forming).toEqual(forming);
    expect(rt.coin.series.get("4h")!.forming).toEqual(derivedForming);
  });
});
