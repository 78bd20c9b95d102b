/**
 * The read side of the engine: what a paid call reads. A call never computes signals; it
 * only looks up the latest reading per (coin, timeframe).
 */
import type { Timeframe } from "./timeframes.ts";

export type SignalName = "NONE" | "LONG" | "STRONG_LONG" | "SHORT" | "STRONG_SHORT";

export interface ArmingReading {
  dir: 1 | -1;
  score: number;
  trigger: number;
  invalidation: number;
}

export interface SignalReading {
  price: number;
  signal: SignalName;
  confirmed: boolean;
  defense: number | null;
  arming: ArmingReading | null;
  atrPct: number;
  /** Id of the signal event behind a confirmed reading; null when unconfirmed or before any. */
  signalId: string | null;
  /** The reading comes from the demo feed's synthetic prices (the whole coin's history does). */
  demo?: boolean;
}

export type UnavailableReason = "unknown_symbol" | "no_data" | "stale" | "invalid_symbol";

export type SnapshotLookup = { ok: true; reading: SignalReading } | { ok: false; reason: Exclude<UnavailableReason, "invalid_symbol"> };

/** Source of current readings; implemented by the engine's state cache. */
export interface SignalSnapshot {
  lookup(symbol: string, tf: Timeframe, now: number): SnapshotLookup;
}

/** The snapshot before any candle has arrived: every well-formed coin has no data yet. */
export const emptySnapshot: SignalSnapshot = {
  lookup: () => ({ ok: false, reason: "no_data" }),
};
