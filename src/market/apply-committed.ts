/**
 * How a process follows what another process committed without reloading it: the writer's
 * engines moved by stepping the base candles it stored, so stepping the same candles from the
 * same state gives the same state. Pure (no I/O): the store's read is `readCommitted`.
 */
import type { CandleRow, CoinRuntime, SeriesRuntime } from "./coin-runtime.ts";
import type { CheckpointStamp, CommittedChange } from "./store.ts";

/**
 * Brings a coin's runtime, which holds exactly the store's state at an earlier market version,
 * to the change's version: steps its closed base candles after the runtime's last close in
 * order, then takes the latest forming one, as the writer did. Then compares every series with
 * its stored checkpoint's stamp. False when anything differs from what the writer can have left
 * (the runtime may then be part-way: the caller must replace it with a full reload).
 */
export function applyCommitted(coin: CoinRuntime, change: CommittedChange): boolean {
  if (coin.baseTf !== change.baseTf || coin.demo !== change.demo) return false;
  // The writer stored these rows already; apply() hands them back and they are dropped.
  const rows: CandleRow[] = [];
  let forming: CommittedChange["candles"][number] | null = null;
  for (const candle of change.candles) {
    const lastClosed = coin.lastClosedOpenTime;
    if (lastClosed !== null && candle.openTime <= lastClosed) continue;
    if (!candle.closed) {
      forming = candle;
      continue;
    }
    // A forming row before a later close is never what the writer leaves (the close ends it).
    if (forming) return false;
    if (coin.apply({ ...candle, symbol: coin.symbol, tf: coin.baseTf }, rows) !== "accepted") return false;
    rows.length = 0;
  }
  if (forming && coin.apply({ ...forming, symbol: coin.symbol, tf: coin.baseTf }, rows) !== "accepted") return false;
  coin.lastUpdateAt = change.lastUpdateAt;
  for (const series of coin.series.values()) if (!matchesStamp(series, change.stamps.get(series.tf))) return false;
  return true;
}

/**
 * Whether a series' state is the one its stored checkpoint holds, as far as the stamp tells
 * (how many closes, the last one, the ATR that all of them shaped, the signal's candle); on a
 * match it records, as a full reload would, that the store holds this state's checkpoint.
 */
function matchesStamp(series: SeriesRuntime, stamp: CheckpointStamp | undefined): boolean {
  const { state } = series;
  if (stamp === undefined) {
    if (state.count !== 0) return false;
    series.storedCount = 0;
    return true;
  }
  if (
    stamp.count !== state.count ||
    stamp.lastOpenTime !== state.lastOpenTime ||
    stamp.atr !== state.atr ||
    stamp.signalAt !== state.signalAt
  )
    return false;
  series.storedCount = state.count;
  return true;
}
