/**
 * Signal events: a change of a series' signal at a candle close (a new break, or an
 * invalidation back to NONE). The candle that set the signal names the event, so the id is
 * known the moment the engine steps, survives restarts, and is the same in the API answer,
 * the stored row, the alert and the internal stream.
 */
import type { Signal } from "../engine/index.ts";
import type { Timeframe } from "./timeframes.ts";

/** A signal change produced by a candle close, before it is stored. */
export interface SignalChange {
  readonly id: string;
  readonly symbol: string;
  readonly tf: Timeframe;
  readonly signal: Signal;
  /** Close of the candle that set the signal. */
  readonly price: number;
  readonly defense: number | null;
  readonly atrPct: number | null;
  /** Open time (epoch ms) of the candle whose close set the signal. */
  readonly candleOpenTime: number;
}

/** A change with its alerting decision: only candles that closed in real time alert. */
export interface PendingSignalEvent extends SignalChange {
  readonly live: boolean;
}

/** `<SYMBOL>-<tf>-<open time ms>`, e.g. "BTC-4h-1718510400000". */
export function signalEventId(symbol: string, tf: Timeframe, candleOpenTime: number): string {
  return `${symbol}-${tf}-${candleOpenTime}`;
}
