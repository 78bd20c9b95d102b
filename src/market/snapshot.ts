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

export type SnapshotLookup =
  | { ok: true; reading: SignalReading }
  | { ok: false; reason: Exclude<UnavailableReason, "invalid_symbol"> };

/** Market versions per coin (the `coins.version` a market transaction raises). */
export type MarketVersions = Readonly<Record<string, number>>;

/** Source of current readings; implemented by the engine's state cache. */
export interface SignalSnapshot {
  /**
   * The current reading of a coin on a timeframe, or why there is none. A reading returned is
   * never changed afterwards (a new object replaces it): the paid answer builds its entry once
   * per reading object.
   */
  lookup(symbol: string, tf: Timeframe, now: number): SnapshotLookup;
  /**
   * The market version this process's readings of each coin are at (0 for a coin it has not
   * published). Absent on a fixed snapshot, which follows no store (tests).
   */
  versions?(symbols: readonly string[]): MarketVersions;
  /**
   * Brings these coins' readings to at least the given versions, by a deadline (epoch ms);
   * false when that could not be done in time.
   */
  catchUp?(wanted: MarketVersions, deadline: number): Promise<boolean>;
}

/** The snapshot before any candle has arrived: every well-formed coin has no data yet. */
export const emptySnapshot: SignalSnapshot = {
  lookup: () => ({ ok: false, reason: "no_data" }),
};
