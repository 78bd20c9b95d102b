/**
 * The signal_id the contract prescribes for a reference engine run: the event that set the
 * closed state's signal, shown only when the reading is confirmed.
 */
import type { EngineState, Reading } from "../../src/engine/index.ts";
import { signalEventId } from "../../src/market/signal-events.ts";
import type { Timeframe } from "../../src/market/timeframes.ts";

export function referenceSignalId(
  symbol: string,
  tf: Timeframe,
  closedState: EngineState,
  reading: Reading,
): string | null {
  return reading.confirmed && closedState.signalAt !== null ? signalEventId(symbol, tf, closedState.signalAt) : null;
}

/** The REST entry the contract prescribes for a reference engine reading (closed state + reading). */
export function referenceEntry(symbol: string, tf: Timeframe, state: EngineState, r: Reading): Record<string, unknown> {
  return {
    symbol,
    tf,
    ok: true,
    price: r.price,
    signal: r.signal,
    confirmed: r.confirmed,
    defense: r.defense,
    arming: r.arming
      ? { dir: r.arming.dir, score: r.arming.score, trigger: r.arming.trigger, invalidation: r.arming.invalidation }
      : null,
    atr_pct: r.atrPct,
    signal_id: referenceSignalId(symbol, tf, state, r),
  };
}
