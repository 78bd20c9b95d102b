/**
 * The REST JSON mapping of GetSignalsResponse, byte-for-byte the contract of DESIGN.md §2:
 * snake_case names, `ts` and `credits_left` as JSON numbers, `signal` as the enum name
 * without its SIGNAL_ prefix, `defense`/`arming`/`signal_id` null when unset, and entries with ok:false
 * reduced to symbol, tf, ok and reason. (Canonical proto3 JSON would send int64 as strings
 * and omit unset fields, which the contract does not allow.)
 */
import { Signal, type GetSignalsResponse, type SignalEntry } from "../../gen/signals/v1/signals_pb.js";

/** Name of a Signal value as REST sends it, e.g. "STRONG_LONG". */
export function signalName(value: Signal): string {
  const name = Signal[value];
  return name === undefined || value === Signal.UNSPECIFIED ? "NONE" : name;
}

function entryJson(entry: SignalEntry): Record<string, unknown> {
  if (!entry.ok) return { symbol: entry.symbol, tf: entry.tf, ok: false, reason: entry.reason };
  return {
    symbol: entry.symbol,
    tf: entry.tf,
    ok: true,
    price: entry.price,
    signal: signalName(entry.signal),
    confirmed: entry.confirmed,
    defense: entry.defense ?? null,
    arming: entry.arming
      ? { dir: entry.arming.dir, score: entry.arming.score, trigger: entry.arming.trigger, invalidation: entry.arming.invalidation }
      : null,
    atr_pct: entry.atrPct,
    signal_id: entry.signalId ?? null,
  };
}

/** The 200 body of GET /api/v1/signals. */
export function getSignalsResponseJson(response: GetSignalsResponse): Record<string, unknown> {
  return {
    ok: response.ok,
    tf: response.tf,
    ts: Number(response.ts),
    signals: response.signals.map(entryJson),
    tier: response.tier,
    billing: response.billing,
    credits_left: Number(response.creditsLeft),
  };
}
