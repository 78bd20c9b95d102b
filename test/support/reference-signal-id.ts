/**
 * The signal_id the contract prescribes for a reference engine run: the event that set the
 * closed state's signal, shown only when the reading is confirmed.
 */
import type { EngineState, Reading } from "../../src/engine/index.ts";
import { signalEventId } from "../../src/market/signal-events.ts";
import type { Timeframe } from "../../src/market/timeframes.ts";

export function referenceSignalId(symbol: string, tf: Timeframe, closedState: EngineState, reading: Reading): string | null {
  return reading.confirmed && closedState.signalAt !== null ? signalEventId(symbol, tf, closedState.signalAt) : null;
}
