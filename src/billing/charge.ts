/**
 * The check-and-charge of one paid call: one SQL function call, so one transaction and one
 * database round trip. The function applies the checks in the contract's order.
 */
import { sql } from "drizzle-orm";
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

interface ChargeRow {
  outcome: ChargeOutcome;
  account_id: number | string | null;
  plan: string | null;
  credits_left: number | string | null;
  calls_today: number | string | null;
  low_balance_crossed: boolean;
}

const toNumber = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** Checks the key, plan, subscription, balance and daily cap, and charges 1 Token if all pass. */
export async function chargeCall(handle: DbHandle, keyHash: string, limits: Limits, now: number): Promise<ChargeResult> {
  const rows = await handle.rows<ChargeRow>(sql`SELECT * FROM charge_call(
    ${keyHash}, ${new Date(now).toISOString()}::timestamptz, ${mytDay(now)}::date, ${mytMonth(now)}::date,
    ${limits.dailyCap}::integer, ${limits.monthlyGrant}::bigint, ${lowBalanceThreshold(limits)}::bigint)`);
  const row = rows[0]!;
  return {
    outcome: row.outcome,
    accountId: toNumber(row.account_id),
    plan: row.plan,
    creditsLeft: toNumber(row.credits_left),
    callsToday: toNumber(row.calls_today),
    lowBalanceCrossed: row.low_balance_crossed === true,
  };
}
