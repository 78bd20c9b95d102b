/**
 * Independent, deliberately naive MS-1 reference (DESIGN.md §5) used only by tests. It keeps no
 * incremental state: every quantity at t is recomputed from the candle arrays by scanning, so it
 * shares no code and no bookkeeping with src/engine.
 */
import type { Candle } from "../../../src/engine/candle.ts";

/** Signals in the naive reference's own vocabulary (same strings as the engine's). */
export type NaiveSignal = "NONE" | "LONG" | "STRONG_LONG" | "SHORT" | "STRONG_SHORT";

/** One arming candidate before the tie-break, with the raw ratios the score floors are taken of. */
export type NaiveCandidate = {
  dir: 1 | -1;
  score: number;
  trigger: number;
  invalidation: number;
  distance: number;
  risk: number;
};

/** Everything the naive reference knows at t, recomputed from candles[0..t]. */
export type NaiveReading = {
  price: number;
  signal: NaiveSignal;
  defense: number | null;
  arming: { dir: 1 | -1; score: number; trigger: number; invalidation: number } | null;
  atrPct: number | null;
  atr: number | null;
  trend: -1 | 0 | 1;
  swingHigh: number | null;
  swingHighIndex: number | null;
  swingHighBroken: boolean;
  minSinceHigh: number | null;
  swingLow: number | null;
  swingLowIndex: number | null;
  swingLowBroken: boolean;
  maxSinceLow: number | null;
  up: NaiveCandidate | null;
  down: NaiveCandidate | null;
};

type Break = { dir: 1 | -1; level: number; defense: number };

/** The MS-2 options in the naive reference's own terms (all off = MS-1). */
export type NaiveOptions = {
  breakBufferAtr?: number;
  trailDefense?: boolean;
  withTrendOnly?: boolean;
  majorPivotHalfWidth?: number;
};

/** How far a close must pass a level at each candle: buffer·ATR(u), 0 where ATR is undefined. */
type Margins = readonly number[];

/** Wilder ATR at t recomputed from the start: undefined before N-1, mean of the first N TRs at N-1. */
export function naiveAtr(c: readonly Candle[], t: number, n: number): number | null {
  if (t < n - 1) return null;
  const tr = (i: number): number => {
    const x = c[i] as Candle;
    if (i === 0) return x.high - x.low;
    const pc = (c[i - 1] as Candle).close;
    return Math.max(x.high - x.low, Math.abs(x.high - pc), Math.abs(x.low - pc));
  };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += tr(i);
  let atr = sum / n;
  for (let i = n; i <= t; i++) atr = (atr * (n - 1) + tr(i)) / n;
  return atr;
}

/** Whether candle p is a swing high once candles up to p+k exist (left strict, right non-strict). */
function isSwingHigh(c: readonly Candle[], p: number, k: number): boolean {
  if (p - k < 0 || p + k >= c.length) throw new Error("naive: pivot window outside the visible candles");
  const h = (c[p] as Candle).high;
  const left = c.slice(p - k, p).map((x) => x.high);
  const right = c.slice(p + 1, p + k + 1).map((x) => x.high);
  return h > Math.max(...left) && h >= Math.max(...right);
}

function isSwingLow(c: readonly Candle[], p: number, k: number): boolean {
  if (p - k < 0 || p + k >= c.length) throw new Error("naive: pivot window outside the visible candles");
  const l = (c[p] as Candle).low;
  const left = c.slice(p - k, p).map((x) => x.low);
  const right = c.slice(p + 1, p + k + 1).map((x) => x.low);
  return l < Math.min(...left) && l <= Math.min(...right);
}

/** Index of the latest pivot (of the given kind) confirmed by the close of candle s, i.e. p + k ≤ s. */
function latestPivot(c: readonly Candle[], s: number, k: number, kind: "high" | "low"): number | null {
  if (s >= c.length) throw new Error("naive: asked about a candle that is not visible");
  for (let p = s - k; p - k >= 0; p--) {
    if (kind === "high" ? isSwingHigh(c, p, k) : isSwingLow(c, p, k)) return p;
  }
  return null;
}

/**
 * A pivot at p is broken by the end of s when some close after its confirmation went through it by more than the
 * margin.
 */
function isBroken(
  c: readonly Candle[],
  p: number,
  s: number,
  k: number,
  kind: "high" | "low",
  margins: Margins,
): boolean {
  const level = kind === "high" ? (c[p] as Candle).high : (c[p] as Candle).low;
  for (let u = p + k + 1; u <= s; u++) {
    const close = (c[u] as Candle).close;
    if (kind === "high" ? close - level > (margins[u] ?? 0) : level - close > (margins[u] ?? 0)) return true;
  }
  return false;
}

/** Lowest low of candles p+1..s (the extremes "since" a pivot exclude the pivot candle itself). */
function lowestLow(c: readonly Candle[], p: number, s: number): number {
  return Math.min(...c.slice(p + 1, s + 1).map((x) => x.low));
}

function highestHigh(c: readonly Candle[], p: number, s: number): number {
  return Math.max(...c.slice(p + 1, s + 1).map((x) => x.high));
}

/** Break on candle s, judged against the swing points confirmed by candle s-1. */
function breakAt(c: readonly Candle[], s: number, k: number, margins: Margins): Break | null {
  const close = (c[s] as Candle).close;
  const margin = margins[s] ?? 0;
  const ph = s > 0 ? latestPivot(c, s - 1, k, "high") : null;
  const pl = s > 0 ? latestPivot(c, s - 1, k, "low") : null;
  const bull =
    ph !== null && !isBroken(c, ph, s - 1, k, "high", margins) && close - (c[ph] as Candle).high > margin
      ? { dir: 1 as const, level: (c[ph] as Candle).high, defense: lowestLow(c, ph, s) }
      : null;
  const bear =
    pl !== null && !isBroken(c, pl, s - 1, k, "low", margins) && (c[pl] as Candle).low - close > margin
      ? { dir: -1 as const, level: (c[pl] as Candle).low, defense: highestHigh(c, pl, s) }
      : null;
  if (bull !== null && bear !== null) throw new Error(`naive: bullish and bearish break on the same candle ${s}`);
  return bull ?? bear;
}

/** The naive reading at every t of the series, each computed from candles[0..t] only. */
export function naiveSeries(candles: readonly Candle[], k = 3, n = 14, options: NaiveOptions = {}): NaiveReading[] {
  const buffer = options.breakBufferAtr ?? 0;
  const major = options.majorPivotHalfWidth ?? 0;
  const noMargins: Margins = [];
  const breaks: (Break | null)[] = [];
  const majorBreaks: (Break | null)[] = [];
  const out: NaiveReading[] = [];
  for (let t = 0; t < candles.length; t++) {
    // Only the prefix is visible: this is what makes look-ahead impossible by construction.
    const c = candles.slice(0, t + 1);
    const margins: Margins = buffer === 0 ? noMargins : c.map((_, u) => buffer * (naiveAtr(c, u, n) ?? 0));
    breaks.push(breakAt(c, t, k, margins));
    // The major structure: the same pivots and breaks with half-width K and no margin.
    majorBreaks.push(major > 0 ? breakAt(c, t, major, noMargins) : null);
    const price = (c[t] as Candle).close;

    // Signal: the latest break decides it, unless a later close went through its defense.
    let signal: NaiveSignal = "NONE";
    let defense: number | null = null;
    let trend: -1 | 0 | 1 = 0;
    let last = -1;
    for (let s = t; s >= 0; s--) {
      if (breaks[s] != null) {
        last = s;
        break;
      }
    }
    if (last >= 0) {
      const b = breaks[last] as Break;
      trend = b.dir;
      let before: -1 | 0 | 1 = 0;
      for (let s = last - 1; s >= 0; s--) {
        const pb = breaks[s];
        if (pb != null) {
          before = pb.dir;
          break;
        }
      }
      const strong = before === b.dir;
      let majorTrend: -1 | 0 | 1 = 0;
      for (let u = last; u >= 0; u--) {
        const mb = majorBreaks[u];
        if (mb != null) {
          majorTrend = mb.dir;
          break;
        }
      }
      const blocked = (options.withTrendOnly === true && !strong) || majorTrend === -b.dir;
      if (!blocked) {
        signal = b.dir === 1 ? (strong ? "STRONG_LONG" : "LONG") : strong ? "STRONG_SHORT" : "SHORT";
        defense = b.defense;
        for (let u = last; u <= t; u++) {
          const close = (c[u] as Candle).close;
          if (u > last && (b.dir === 1 ? close <= defense : close >= defense)) {
            signal = "NONE";
            defense = null;
            break;
          }
          // Trailing: a swing point of the position's side confirmed by this close, tighter than the defense.
          const p = u - k;
          if (options.trailDefense === true && p - k >= 0) {
            if (b.dir === 1 && isSwingLow(c, p, k)) {
              const level = (c[p] as Candle).low;
              if (level > defense && level < close) defense = level;
            }
            if (b.dir === -1 && isSwingHigh(c, p, k)) {
              const level = (c[p] as Candle).high;
              if (level < defense && level > close) defense = level;
            }
          }
        }
      }
    }

    const atr = naiveAtr(c, t, n);
    const ph = latestPivot(c, t, k, "high");
    const pl = latestPivot(c, t, k, "low");
    const swingHigh = ph === null ? null : (c[ph] as Candle).high;
    const swingLow = pl === null ? null : (c[pl] as Candle).low;
    const highBroken = ph !== null && isBroken(c, ph, t, k, "high", margins);
    const lowBroken = pl !== null && isBroken(c, pl, t, k, "low", margins);
    const minSinceHigh = ph === null ? null : lowestLow(c, ph, t);
    const maxSinceLow = pl === null ? null : highestHigh(c, pl, t);

    let up: NaiveCandidate | null = null;
    let down: NaiveCandidate | null = null;
    if (atr !== null) {
      if (swingHigh !== null && minSinceHigh !== null && !highBroken && minSinceHigh < price && price < swingHigh) {
        const distance = Math.abs(swingHigh - price);
        if (distance < 2 * atr) {
          const risk = Math.abs(swingHigh - minSinceHigh);
          const P = Math.max(0, 4 - Math.floor((2 * distance) / atr));
          const A = trend === 1 ? 3 : trend === 0 ? 1 : 0;
          const R = Math.max(0, 3 - Math.floor(risk / atr));
          up = { dir: 1, score: P + A + R, trigger: swingHigh, invalidation: minSinceHigh, distance, risk };
        }
      }
      if (swingLow !== null && maxSinceLow !== null && !lowBroken && swingLow < price && price < maxSinceLow) {
        const distance = Math.abs(swingLow - price);
        if (distance < 2 * atr) {
          const risk = Math.abs(swingLow - maxSinceLow);
          const P = Math.max(0, 4 - Math.floor((2 * distance) / atr));
          const A = trend === -1 ? 3 : trend === 0 ? 1 : 0;
          const R = Math.max(0, 3 - Math.floor(risk / atr));
          down = { dir: -1, score: P + A + R, trigger: swingLow, invalidation: maxSinceLow, distance, risk };
        }
      }
    }
    let chosen: NaiveCandidate | null = null;
    if (up !== null && down !== null) {
      if (up.score !== down.score) chosen = up.score > down.score ? up : down;
      else if (trend !== 0) chosen = trend === 1 ? up : down;
      else if (up.distance !== down.distance) chosen = up.distance < down.distance ? up : down;
      else chosen = null;
    } else {
      chosen = up ?? down;
    }

    out.push({
      price,
      signal,
      defense,
      arming:
        chosen === null
          ? null
          : { dir: chosen.dir, score: chosen.score, trigger: chosen.trigger, invalidation: chosen.invalidation },
      atrPct: atr === null ? null : (100 * atr) / price,
      atr,
      trend,
      swingHigh,
      swingHighIndex: ph,
      swingHighBroken: highBroken,
      minSinceHigh,
      swingLow,
      swingLowIndex: pl,
      swingLowBroken: lowBroken,
      maxSinceLow,
      up,
      down,
    });
  }
  return out;
}
