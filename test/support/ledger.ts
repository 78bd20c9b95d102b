/**
 * The ledger invariant, checked the same way by every test that moves Tokens: per account,
 * the deltas sum to the balances and the last row's "after" columns equal them.
 */
import { sql } from "drizzle-orm";
import type { DbHandle } from "../../src/db/client.ts";

export interface LedgerCheck {
  accountId: number;
  grantBalance: number;
  packBalance: number;
  grantSum: number;
  packSum: number;
  lastGrantAfter: number | null;
  lastPackAfter: number | null;
  charges: number;
  /** Charges given back because their call was answered 503 before the charge was known to have committed. */
  refunds: number;
}

/** Reads balances and ledger sums for one account. */
export async function ledgerCheck(db: DbHandle, accountId: number): Promise<LedgerCheck> {
  const [row] = await db.rows<Record<string, string | number | null>>(sql`
    SELECT a.id, a.grant_balance, a.pack_balance,
      coalesce((SELECT sum(grant_delta) FROM ledger_entries l WHERE l.account_id = a.id), 0) AS grant_sum,
      coalesce((SELECT sum(pack_delta) FROM ledger_entries l WHERE l.account_id = a.id), 0) AS pack_sum,
      (SELECT grant_after FROM ledger_entries l WHERE l.account_id = a.id ORDER BY id DESC LIMIT 1) AS last_grant_after,
      (SELECT pack_after FROM ledger_entries l WHERE l.account_id = a.id ORDER BY id DESC LIMIT 1) AS last_pack_after,
      (SELECT count(*) FROM ledger_entries l WHERE l.account_id = a.id AND kind = 'charge') AS charges,
      (SELECT count(*) FROM ledger_entries l WHERE l.account_id = a.id AND kind = 'adjustment'
        AND reason LIKE 'refund: call answered 503%') AS refunds
    FROM accounts a WHERE a.id = ${accountId}`);
  const n = (v: string | number | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    accountId,
    grantBalance: n(row!.grant_balance)!,
    packBalance: n(row!.pack_balance)!,
    grantSum: n(row!.grant_sum)!,
    packSum: n(row!.pack_sum)!,
    lastGrantAfter: n(row!.last_grant_after),
    lastPackAfter: n(row!.last_pack_after),
    charges: n(row!.charges)!,
    refunds: n(row!.refunds)!,
  };
}

/** True when the ledger sums to the balances and ends on them. */
export function ledgerBalances(check: LedgerCheck): boolean {
  return (
    check.grantSum === check.grantBalance &&
    check.packSum === check.packBalance &&
    (check.lastGrantAfter === null ||
      (check.lastGrantAfter === check.grantBalance && check.lastPackAfter === check.packBalance))
  );
}
