/**
 * Probability of backtest overfitting by combinatorially symmetric cross-validation (CSCV):
 * D. H. Bailey, J. M. Borwein, M. López de Prado and Q. J. Zhu, "The Probability of Backtest
 * Overfitting", Journal of Computational Finance 20(4), 2017 (working paper 2013–2015).
 *
 * The T × N matrix of per-period returns of N candidate configurations is cut into S blocks of
 * consecutive rows. For every way of choosing S/2 blocks as in-sample (the rest, in the same
 * order, out-of-sample), the configuration with the best in-sample Sharpe ratio is ranked among
 * all N out-of-sample: ω = rank / (N + 1) (rank 1 = worst), λ = ln(ω / (1 − ω)). PBO is the share
 * of splits with λ ≤ 0, i.e. where the in-sample winner does no better than the median out of
 * sample. Pure: no I/O, no clock.
 */

/** The result of CSCV over one matrix. */
export type BacktestOverfitting = {
  /** Share of the splits whose in-sample winner ranks at or below the median out of sample. */
  readonly pbo: number;
  /** Number of splits: C(S, S/2). */
  readonly splits: number;
  readonly blocks: number;
  readonly candidates: number;
  /** λ of every split, in the order the splits are enumerated (lexicographic in-sample blocks). */
  readonly logits: readonly number[];
};

/**
 * Sharpe ratio from sums (sample standard deviation); a candidate with no variation scores 0, like one that never
 * trades.
 */
function sharpeOfSums(count: number, sum: number, squares: number): number {
  if (count < 2) return 0;
  const m = sum / count;
  const variance = (squares - count * m * m) / (count - 1);
  return variance > 1e-30 ? m / Math.sqrt(variance) : 0;
}

/** Every subset of size k of {0 … n−1}, in lexicographic order. */
function* combinations(n: number, k: number): Generator<number[]> {
  const pick = Array.from({ length: k }, (_, i) => i);
  for (;;) {
    yield [...pick];
    let i = k - 1;
    while (i >= 0 && pick[i] === n - k + i) i--;
    if (i < 0) return;
    pick[i]!++;
    for (let j = i + 1; j < k; j++) pick[j] = pick[j - 1]! + 1;
  }
}

/**
 * PBO of choosing the best of `returns[0].length` candidates by Sharpe ratio, where `returns[t][n]`
 * is candidate n's return in period t (all candidates over the same periods). `blocks` (S) is even;
 * blocks differ in length by at most one row when T is not a multiple of S (the first T mod S
 * blocks take the extra row). Ties: the in-sample winner is the first best; tied out-of-sample
 * values share their mid-rank.
 */
export function probabilityOfBacktestOverfitting(
  returns: readonly (readonly number[])[],
  blocks = 16,
): BacktestOverfitting {
  const rows = returns.length;
  const candidates = returns[0]?.length ?? 0;
  if (!Number.isInteger(blocks) || blocks < 2 || blocks % 2 !== 0)
    throw new RangeError(`the number of blocks must be an even integer ≥ 2, got ${blocks}`);
  if (candidates < 2) throw new RangeError("CSCV needs at least two candidates");
  if (rows < 2 * blocks)
    throw new RangeError(`CSCV needs at least two periods per block: ${rows} periods for ${blocks} blocks`);
  if (returns.some((row) => row.length !== candidates || row.some((r) => !Number.isFinite(r)))) {
    throw new RangeError("every period needs a finite return for every candidate");
  }

  // Σr and Σr² per block and candidate (flat, block-major), so a split adds S/2 block sums per
  // candidate for its in-sample half and takes the out-of-sample half as the total minus that.
  const sums = new Float64Array(blocks * candidates);
  const squares = new Float64Array(blocks * candidates);
  const counts: number[] = [];
  const base = Math.floor(rows / blocks);
  const extra = rows % blocks;
  let row = 0;
  for (let b = 0; b < blocks; b++) {
    const length = base + (b < extra ? 1 : 0);
    for (let t = row; t < row + length; t++) {
      const values = returns[t]!;
      for (let n = 0; n < candidates; n++) {
        sums[b * candidates + n]! += values[n]!;
        squares[b * candidates + n]! += values[n]! * values[n]!;
      }
    }
    counts.push(length);
    row += length;
  }
  const totalSums = new Float64Array(candidates);
  const totalSquares = new Float64Array(candidates);
  for (let b = 0; b < blocks; b++) {
    for (let n = 0; n < candidates; n++) {
      totalSums[n]! += sums[b * candidates + n]!;
      totalSquares[n]! += squares[b * candidates + n]!;
    }
  }

  const inSums = new Float64Array(candidates);
  const inSquares = new Float64Array(candidates);
  const outSharpes = new Float64Array(candidates);
  const logits: number[] = [];
  let overfit = 0;
  for (const inSample of combinations(blocks, blocks / 2)) {
    inSums.fill(0);
    inSquares.fill(0);
    let inCount = 0;
    for (const b of inSample) {
      inCount += counts[b]!;
      for (let n = 0; n < candidates; n++) {
        inSums[n]! += sums[b * candidates + n]!;
        inSquares[n]! += squares[b * candidates + n]!;
      }
    }
    const outCount = rows - inCount;
    let best = 0;
    let bestInSharpe = Number.NEGATIVE_INFINITY;
    for (let n = 0; n < candidates; n++) {
      const is = sharpeOfSums(inCount, inSums[n]!, inSquares[n]!);
      if (is > bestInSharpe) {
        bestInSharpe = is;
        best = n;
      }
      outSharpes[n] = sharpeOfSums(outCount, totalSums[n]! - inSums[n]!, totalSquares[n]! - inSquares[n]!);
    }
    let below = 0;
    let tied = 0; // includes the winner itself
    for (let n = 0; n < candidates; n++) {
      if (outSharpes[n]! < outSharpes[best]!) below++;
      else if (outSharpes[n] === outSharpes[best]) tied++;
    }
    const rank = below + (tied + 1) / 2;
    const omega = rank / (candidates + 1);
    const logit = Math.log(omega / (1 - omega));
    logits.push(logit);
    if (logit <= 0) overfit++;
  }
  return { pbo: overfit / logits.length, splits: logits.length, blocks, candidates, logits };
}
