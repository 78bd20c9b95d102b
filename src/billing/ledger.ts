/**
 * Reading the Token ledger (it is written only by the SQL functions of billing/).
 */
import { desc, eq } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { ledgerEntries, type LedgerKind } from "../db/schema.ts";

export interface LedgerEntry {
  readonly id: number;
  readonly kind: LedgerKind;
  readonly grantDelta: number;
  readonly packDelta: number;
  readonly grantAfter: number;
  readonly packAfter: number;
  readonly reason: string | null;
  readonly createdAt: Date;
}

/** The account's newest ledger rows, newest first. Only ever one account's rows. */
export async function recentLedgerEntries(handle: DbHandle, accountId: number, limit: number): Promise<LedgerEntry[]> {
  const rows = await handle.db
    .select()
    .from(ledgerEntries)
    .where(eq(ledgerEntries.accountId, accountId))
    .orderBy(desc(ledgerEntries.id))
    .limit(limit);
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind,
    grantDelta: Number(r.grantDelta),
    packDelta: Number(r.packDelta),
    grantAfter: Number(r.grantAfter),
    packAfter: Number(r.packAfter),
    reason: r.reason,
    createdAt: r.createdAt,
  }));
}
