/**
 * The check-and-charge of paid calls. Each call is one `charge_call` (checks in the contract's
 * order, then the charge), and calls that arrive together are sent as ONE statement: one
 * transaction and one database round trip for the whole group. A commit costs a WAL flush,
 * so grouping is what lets the ledger keep up with many callers on a small machine.
 *
 * Within a group the calls run in key-hash order. Every group locks accounts in that same
 * global order, so two groups cannot deadlock. If the statement fails, the transaction rolls
 * back and every call in the group is refused as unavailable, with nothing charged.
 */
import type { DbHandle } from "../db/client.ts";
import type { Limits } from "../config.ts";
import { mytDay, mytMonth } from "../clock.ts";
import { lowBalanceThreshold } from "./tokens.ts";

export type ChargeOutcome =
  | "ok"
  | "invalid_api_key"
  | "node_tier_required"
  | "subscription_inactive"
  | "insufficient_credits"
  | "rate_limited";

export interface ChargeResult {
  outcome: ChargeOutcome;
  accountId: number | null;
  plan: string | null;
  /** Grant + packs after this call (0 when refused for credits). */
  creditsLeft: number | null;
  /** Charged calls today (MYT), after this call when it was charged. */
  callsToday: number | null;
  /** True exactly when this charge took the balance below the low-balance threshold. */
  lowBalanceCrossed: boolean;
}

export interface ChargeRow {
  outcome: ChargeOutcome;
  account_id: number | string | null;
  plan: string | null;
  credits_left: number | string | null;
  calls_today: number | string | null;
  low_balance_crossed: boolean;
}

const CHARGE_BATCH_SQL = `
  SELECT k.ord, r.*
    FROM unnest($1::text[], $2::timestamptz[], $3::date[], $4::date[]) WITH ORDINALITY AS k(key_hash, at, day, month, ord)
   CROSS JOIN LATERAL charge_call(k.key_hash, k.at, k.day, k.month, $5::integer, $6::bigint, $7::bigint) AS r
   ORDER BY k.ord`;

/** Largest group sent in one statement. */
const MAX_BATCH = 128;

const toNumber = (v: number | string | null): number | null => (v === null ? null : Number(v));

export function toResult(row: ChargeRow): ChargeResult {
  return {
    outcome: row.outcome,
    accountId: toNumber(row.account_id),
    plan: row.plan,
    creditsLeft: toNumber(row.credits_left),
    callsToday: toNumber(row.calls_today),
    lowBalanceCrossed: row.low_balance_crossed === true,
  };
}

interface ChargeRequest {
  keyHash: string;
  now: number;
}

/** Runs a group of charges in one statement; results come back in the order given. */
export async function chargeBatch(handle: DbHandle, requests: ChargeRequest[], limits: Limits): Promise<ChargeResult[]> {
  const order = requests.map((_, i) => i).sort((a, b) => (requests[a]!.keyHash < requests[b]!.keyHash ? -1 : requests[a]!.keyHash > requests[b]!.keyHash ? 1 : a - b));
  const sorted = order.map((i) => requests[i]!);
  const rows = await handle.prepared<ChargeRow & { ord: number | string }>(CHARGE_BATCH_SQL, [
    sorted.map((r) => r.keyHash),
    sorted.map((r) => new Date(r.now).toISOString()),
    sorted.map((r) => mytDay(r.now)),
    sorted.map((r) => mytMonth(r.now)),
    limits.dailyCap,
    limits.monthlyGrant,
    lowBalanceThreshold(limits),
  ]);
  if (rows.length !== requests.length) throw new Error(`charge_call returned ${rows.length} rows for ${requests.length} calls`);
  const results = new Array<ChargeResult>(requests.length);
  rows.forEach((row, position) => {
    results[order[position]!] = toResult(row);
  });
  return results;
}

/** Checks the key, plan, subscription, balance and daily cap, and charges 1 Token if all pass. */
export async function chargeCall(handle: DbHandle, keyHash: string, limits: Limits, now: number): Promise<ChargeResult> {
  const [result] = await chargeBatch(handle, [{ keyHash, now }], limits);
  return result!;
}

export type Charger = (keyHash: string, now: number) => Promise<ChargeResult>;

/**
 * Groups the calls that arrive in the same turn of the event loop (up to MAX_BATCH) into one
 * chargeBatch. Several groups may be in flight at once, each on its own pool connection.
 */
export function createChargeBatcher(handle: DbHandle, limits: Limits): Charger {
  let pending: { request: ChargeRequest; resolve: (r: ChargeResult) => void; reject: (e: unknown) => void }[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const group = pending;
    pending = [];
    if (group.length === 0) return;
    chargeBatch(handle, group.map((g) => g.request), limits).then(
      (results) => group.forEach((g, i) => g.resolve(results[i]!)),
      (err: unknown) => group.forEach((g) => g.reject(err)),
    );
  };
  return (keyHash, now) =>
    new Promise<ChargeResult>((resolve, reject) => {
      pending.push({ request: { keyHash, now }, resolve, reject });
      if (pending.length >= MAX_BATCH) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
