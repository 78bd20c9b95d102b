import type { Candle } from "./candle.ts";
import { assertValidCandle } from "./candle.ts";
import type { EngineState } from "./state.ts";

const PIVOT_HIGH = 1;
const PIVOT_LOW = 2;

/** Whether candle p is a swing high and/or low with half-width w (bit flags); its windows must be in the ring. */
function pivotKind(state: EngineState, p: number, w: number, mask: number): number {
  const ph = state.highs[p & mask] as number;
  const pl = state.lows[p & mask] as number;
  let isHigh = true;
  let isLow = true;
  for (let j = 1; j <= w && (isHigh || isLow); j++) {
    const left = (p - j) & mask;
    const right = (p + j) & mask;
    // Left strict, right non-strict: of equal highs the first one is the pivot.
    if (isHigh && ((state.highs[left] as number) >= ph || (state.highs[right] as number) > ph)) isHigh = false;
    if (isLow && ((state.lows[left] as number) <= pl || (state.lows[right] as number) < pl)) isLow = false;
  }
  return (isHigh ? PIVOT_HIGH : 0) | (isLow ? PIVOT_LOW : 0);
}

function isLong(state: EngineState): boolean {
  return state.signal === "LONG" || state.signal === "STRONG_LONG";
}

function isShort(state: EngineState): boolean {
  return state.signal === "SHORT" || state.signal === "STRONG_SHORT";
}

/** Folds one closed candle into the state in place (S_t = step(S_{t-1}, candle_t)); throws RangeError on bad input. */
export function stepClosed(state: EngineState, candle: Candle): void {
  // Mutating in place keeps the hot path allocation-free; callers that need the old state use
  // cloneState. All validation happens before the first write, so a throw leaves the state intact.
  assertValidCandle(candle);
  const { openTime, high, low, close } = candle;
  if (state.lastOpenTime !== null && !(openTime > state.lastOpenTime)) {
    // A replayed or out-of-order candle would silently corrupt pivots and ATR; refuse it.
    throw new RangeError(`candle openTime ${openTime} is not after the last closed candle ${state.lastOpenTime}`);
  }

  const t = state.count;
  const n = state.atrPeriod;
  const k = state.pivotHalfWidth;
  // Power-of-two ring: `& mask` instead of `%` saves about a fifth of the step's time.
  const mask = state.highs.length - 1;

  // 1. Wilder ATR. The first TR has no previous close; the seed is the plain mean of the first N TRs
  //    summed left to right, which is also how trading-signals' SMA seed is computed.
  const prevClose = state.lastClose;
  let tr = high - low;
  if (prevClose !== null) {
    const up = Math.abs(high - prevClose);
    const down = Math.abs(low - prevClose);
    if (up > tr) tr = up;
    if (down > tr) tr = down;
  }
  if (t < n) {
    state.trSum += tr;
    if (t === n - 1) state.atr = state.trSum / n;
  } else {
    state.atr = ((state.atr as number) * (n - 1) + tr) / n;
  }

  const slot = t & mask;
  state.highs[slot] = high;
  state.lows[slot] = low;
  state.openTimes[slot] = openTime;

  // 2a. The extremes since H / L include this candle before the break test, so a breaking candle that
  //     swept below the pullback low sets the defense at its own low.
  if (state.minSinceHigh !== null && low < state.minSinceHigh) state.minSinceHigh = low;
  if (state.maxSinceLow !== null && high > state.maxSinceLow) state.maxSinceLow = high;

  // 3. Breaks are tested against the levels known before this candle. A bullish and a bearish break
  //    cannot both happen on one candle: that would need an unbroken L above an unbroken H, which the
  //    pivot rules plus the break rule exclude (see docs/signals.md), so `else` costs no symmetry.
  //    Differences (close − H) rather than sums (H + buffer) keep the test exact under mirroring.
  //    MS-2's major structure is updated first, so a close that breaks both agrees with itself.
  if (state.majorPivotHalfWidth > 0) {
    if (state.majorHigh !== null && !state.majorHighBroken && close > state.majorHigh) {
      state.majorTrend = 1;
      state.majorHighBroken = true;
    } else if (state.majorLow !== null && !state.majorLowBroken && close < state.majorLow) {
      state.majorTrend = -1;
      state.majorLowBroken = true;
    }
  }
  const buffer = state.breakBufferAtr > 0 && state.atr !== null ? state.breakBufferAtr * state.atr : 0;
  if (state.swingHigh !== null && !state.swingHighBroken && close - state.swingHigh > buffer) {
    const blocked = (state.withTrendOnly && state.trend !== 1) || state.majorTrend === -1;
    state.signal = blocked ? "NONE" : state.trend === 1 ? "STRONG_LONG" : "LONG";
    state.trend = 1;
    state.swingHighBroken = true;
    state.defense = blocked ? null : state.minSinceHigh;
    state.signalAt = openTime;
  } else if (state.swingLow !== null && !state.swingLowBroken && state.swingLow - close > buffer) {
    const blocked = (state.withTrendOnly && state.trend !== -1) || state.majorTrend === 1;
    state.signal = blocked ? "NONE" : state.trend === -1 ? "STRONG_SHORT" : "SHORT";
    state.trend = -1;
    state.swingLowBroken = true;
    state.defense = blocked ? null : state.maxSinceLow;
    state.signalAt = openTime;
  } else if (state.defense !== null) {
    // 4. Invalidation. A break always leaves defense strictly beyond the close, so testing it only
    //    when no break happened loses nothing.
    if (isLong(state) ? close <= state.defense : close >= state.defense) {
      state.signal = "NONE";
      state.defense = null;
      state.signalAt = openTime;
    }
  }

  // 2b. Pivot at p = t - k, confirmed now that its right window p+1..t is closed. It replaces the
  //     previous swing point even when lower, because structure follows the latest swing.
  if (t >= 2 * k) {
    const p = t - k;
    const pSlot = p & mask;
    const kind = pivotKind(state, p, k, mask);
    if ((kind & PIVOT_HIGH) !== 0) {
      const ph = state.highs[pSlot] as number;
      let m = Infinity;
      for (let j = 1; j <= k; j++) {
        const v = state.lows[(p + j) & mask] as number;
        if (v < m) m = v;
      }
      state.swingHigh = ph;
      state.swingHighAt = state.openTimes[pSlot] as number;
      state.swingHighBroken = false;
      state.minSinceHigh = m;
      // MS-2 trailing: a new lower high above the close tightens a short's defense.
      if (state.trailDefense && state.defense !== null && isShort(state) && ph < state.defense && ph > close)
        state.defense = ph;
    }
    if ((kind & PIVOT_LOW) !== 0) {
      const pl = state.lows[pSlot] as number;
      let m = -Infinity;
      for (let j = 1; j <= k; j++) {
        const v = state.highs[(p + j) & mask] as number;
        if (v > m) m = v;
      }
      state.swingLow = pl;
      state.swingLowAt = state.openTimes[pSlot] as number;
      state.swingLowBroken = false;
      state.maxSinceLow = m;
      // MS-2 trailing: a new higher low below the close tightens a long's defense.
      if (state.trailDefense && state.defense !== null && isLong(state) && pl > state.defense && pl < close)
        state.defense = pl;
    }
  }
  const major = state.majorPivotHalfWidth;
  if (major > 0 && t >= 2 * major) {
    const p = t - major;
    const kind = pivotKind(state, p, major, mask);
    if ((kind & PIVOT_HIGH) !== 0) {
      state.majorHigh = state.highs[p & mask] as number;
      state.majorHighBroken = false;
    }
    if ((kind & PIVOT_LOW) !== 0) {
      state.majorLow = state.lows[p & mask] as number;
      state.majorLowBroken = false;
    }
  }

  state.lastClose = close;
  state.lastOpenTime = openTime;
  state.count = t + 1;
}
