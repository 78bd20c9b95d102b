/**
 * Market regime of each period, for splitting a track record into what it earned in rising and
 * in falling markets: the sign of an equal-weight basket's trailing return over the periods
 * before (never including) the one classified, so no period is judged by its own move. Pure.
 */

/** Equal-weight basket return per period: the mean of the coins' returns that period (rebalanced each period). */
export function basketReturns(coins: readonly (readonly number[])[]): number[] {
  const periods = coins[0]?.length ?? 0;
  if (coins.some((c) => c.length !== periods)) throw new RangeError("every coin needs a return for every period");
  return Array.from({ length: periods }, (_, t) => coins.reduce((sum, c) => sum + c[t]!, 0) / coins.length);
}

/**
 * Per period t: 1 when the basket's compounded return over periods t − lookback … t − 1 is above
 * zero, −1 when below, 0 when exactly zero or fewer than `lookback` periods precede t.
 */
export function trailingRegimes(basket: readonly number[], lookback = 30): Int8Array {
  if (!Number.isInteger(lookback) || lookback < 1)
    throw new RangeError(`the look-back must be a positive integer, got ${lookback}`);
  const regimes = new Int8Array(basket.length);
  for (let t = lookback; t < basket.length; t++) {
    let growth = 1;
    for (let k = t - lookback; k < t; k++) growth *= 1 + basket[k]!;
    regimes[t] = Math.sign(growth - 1);
  }
  return regimes;
}

/** A series' returns split by the regime of their period (periods of regime 0 are in neither). */
export function splitByRegime(returns: readonly number[], regimes: Int8Array): { up: number[]; down: number[] } {
  if (returns.length !== regimes.length) throw new RangeError("one regime per return is needed");
  return { up: returns.filter((_, t) => regimes[t] === 1), down: returns.filter((_, t) => regimes[t] === -1) };
}
