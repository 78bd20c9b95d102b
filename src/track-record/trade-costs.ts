/**
 * What a trade is worth after costs: the one accounting every page that shows results after
 * costs shares with the research (bench/research/accounting.ts re-exports it). Pure.
 *
 * The fee is charged on the notional actually traded on each side, which for a short's exit is
 * the buy-back (exit price × units), not the position's value.
 */

/** Costs per side, as fractions of the traded notional. */
export type Costs = {
  /** Exchange fee per side (0.001 = 0.1%). */
  readonly fee: number;
  /** Slippage per side: each fill is this fraction worse than the signal's price (0.0003 = 0.03%). */
  readonly slippage: number;
};

/**
 * Equity multiple of a position marked or closed at `price`. Slippage s moves both fills against
 * the position (entry E = entry·(1 + d·s), exit X = price·(1 − d·s)); the fee f is paid at entry
 * and on the exit notional: (1 − f)·(1 + d·(X − E)/E − f·X/E). For a long that is
 * (1 − f)²·X/E; for a short, (1 − f)·(2 − (1 + f)·X/E). Never below 0: an unleveraged position
 * can lose its stake but not more (a short is liquidated before that).
 */
export function positionValue(direction: 1 | -1, entry: number, price: number, costs: Costs): number {
  const filledEntry = entry * (1 + direction * costs.slippage);
  const filledExit = price * (1 - direction * costs.slippage);
  const r = (direction * (filledExit - filledEntry)) / filledEntry;
  return Math.max(0, (1 - costs.fee) * (1 + r - (costs.fee * filledExit) / filledEntry));
}
