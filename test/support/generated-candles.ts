import fc from "fast-check";
import type { Candle } from "../../src/engine/candle.ts";

/** Options for generated series: length bounds and, optionally, a fixed tick size. */
export type SeriesOptions = {
  minSegments?: number;
  maxSegments?: number;
  /** Price grid step; defaults to a random dyadic tick so arithmetic stays exact under ×2^j and mirroring. */
  tick?: number;
};

type Step = { move: number; up: number; down: number; gap: number; hours: number };
type Segment = { drift: number; vol: number; steps: Step[] };

const stepArb: fc.Arbitrary<Step> = fc.record({
  move: fc.integer({ min: -100, max: 100 }),
  up: fc.nat(100),
  down: fc.nat(100),
  gap: fc.integer({ min: -100, max: 100 }),
  // Mostly contiguous hours, sometimes a hole in the feed: the engine must not care about time gaps.
  hours: fc.oneof({ arbitrary: fc.constant(1), weight: 30 }, { arbitrary: fc.integer({ min: 2, max: 6 }), weight: 1 }),
});

// A segment is a regime: a drift (trend up, down or none) and a volatility, so breaks, pullbacks and
// ranges all occur and every signal type shows up.
const segmentArb: fc.Arbitrary<Segment> = fc.record({
  drift: fc.integer({ min: -6, max: 6 }),
  vol: fc.integer({ min: 1, max: 40 }),
  steps: fc.array(stepArb, { minLength: 2, maxLength: 40, size: "max" }),
});

/** Builds valid candles (0 < low ≤ open, close ≤ high) on an integer tick grid from regime segments. */
function buildSeries(startTicks: number, startHour: number, tick: number, segments: readonly Segment[]): Candle[] {
  const out: Candle[] = [];
  let prevClose = startTicks;
  let hour = startHour;
  for (const seg of segments) {
    for (const st of seg.steps) {
      const gap = Math.abs(st.gap) >= 95 ? Math.sign(st.gap) * seg.vol : 0;
      let open = prevClose + gap;
      let close = open + seg.drift + Math.round((st.move * seg.vol) / 100);
      // Squared draws make most wicks short and a few long, like real candles.
      let high = Math.max(open, close) + Math.round((st.up * st.up * seg.vol) / 10_000);
      let low = Math.min(open, close) - Math.round((st.down * st.down * seg.vol) / 10_000);
      if (low < 1) {
        const shift = 1 - low;
        open += shift;
        close += shift;
        high += shift;
        low += shift;
      }
      hour += st.hours;
      out.push({
        openTime: hour * 3_600_000,
        open: open * tick,
        high: high * tick,
        low: low * tick,
        close: close * tick,
        volume: st.up + st.down,
      });
      prevClose = close;
    }
  }
  return out;
}

/** fast-check arbitrary of realistic OHLC series with trends, ranges, gaps and equal highs/lows. */
export function candleSeries(options: SeriesOptions = {}): fc.Arbitrary<Candle[]> {
  const tickArb = options.tick === undefined ? fc.constantFrom(1, 0.5, 0.25, 0.125) : fc.constant(options.tick);
  return fc
    .tuple(
      fc.integer({ min: 500, max: 200_000 }),
      fc.integer({ min: 440_000, max: 480_000 }),
      tickArb,
      // size "max": the default "small" size would cap series near 50 candles, too short for structure.
      fc.array(segmentArb, { minLength: options.minSegments ?? 1, maxLength: options.maxSegments ?? 12, size: "max" }),
    )
    .map(([start, hour, tick, segments]) => buildSeries(start, hour, tick, segments));
}
