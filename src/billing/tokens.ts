/**
 * Non-call balance changes: monthly grant, Token packs, manual adjustments. Each is one SQL
 * function call (one statement, one transaction) that writes the ledger row with the
 * balances after it.
 */
import { sql } from "drizzle-orm";
import { mytMonth } from "../clock.ts";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";

/** Tokens below which the low-balance notice fires (15% of the grant by default). */
export function lowBalanceThreshold(limits: Limits): number {
  return Math.floor((limits.monthlyGrant * limits.lowBalancePct) / 100);
}

/** Applies this MYT month's grant if not yet applied (no-op for other plans). */
export async function applyMonthlyGrant(
  handle: DbHandle,
  accountId: number,
  limits: Limits,
  now: number,
): Promise<void> {
  await handle.rows(
    sql`SELECT apply_monthly_grant(${accountId}::bigint, ${mytMonth(now)}::date, ${limits.monthlyGrant}::bigint,
      ${lowBalanceThreshold(limits)}::bigint)`,
  );
}

export type AdjustOutcome = "ok" | "not_found" | "insufficient_credits";

/** Adds a pack (kind 'pack', delta > 0) or an adjustment; refuses to go below zero. */
export async function adjustTokens(
  handle: DbHandle,
  accountId: number,
  kind: "pack" | "adjustment",
  delta: number,
  reason: string | null,
  limits: Limits,
): Promise<AdjustOutcome> {
  const [row] = await handle.rows<{ outcome: AdjustOutcome }>(
    sql`SELECT outcome FROM ledger_adjust(${accountId}::bigint, ${kind}, ${delta}::bigint, ${reason},
      ${lowBalanceThreshold(limits)}::bigint)`,
  );
  return row!.outcome;
}
