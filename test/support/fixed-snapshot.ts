/**
 * A SignalSnapshot with fixed readings, so the REST and gRPC contracts can be tested with
 * every field populated before the engine feeds the real one.
 */
import type { SignalReading, SignalSnapshot, SnapshotLookup } from "../../src/market/snapshot.ts";
import type { Timeframe } from "../../src/market/timeframes.ts";

/** Readings by "SYMBOL/tf"; symbols listed in `known` without a reading answer no_data. */
export function fixedSnapshot(readings: Record<string, SignalReading>, known: string[] = []): SignalSnapshot {
  return {
    lookup(symbol: string, tf: Timeframe): SnapshotLookup {
      const reading = readings[`${symbol}/${tf}`];
      if (reading) return { ok: true, reading };
      const isKnown = known.includes(symbol) || Object.keys(readings).some((k) => k.startsWith(`${symbol}/`));
      return { ok: false, reason: isKnown ? "no_data" : "unknown_symbol" };
    },
  };
}

export const SAMPLE_READINGS: Record<string, SignalReading> = {
  "BTC/1h": {
    price: 64210.5,
    signal: "LONG",
    confirmed: true,
    defense: 63120,
    arming: { dir: -1, score: 6, trigger: 63500, invalidation: 64890 },
    atrPct: 0.84,
    signalId: "BTC-1h-1795302000000",
  },
  "ETH/1h": {
    price: 3120.25,
    signal: "NONE",
    confirmed: false,
    defense: null,
    arming: null,
    atrPct: 1.25,
    signalId: null,
  },
  "SOL/1h": {
    price: 150,
    signal: "STRONG_SHORT",
    confirmed: true,
    defense: 155.5,
    arming: null,
    atrPct: 2,
    signalId: "SOL-1h-1795298400000",
  },
};
