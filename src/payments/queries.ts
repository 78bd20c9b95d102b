/**
 * Reading what Stripe reported (payments are written only by the SQL functions of
 * src/db/functions/stripe_*.sql).
 */
import { desc, eq } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { ledgerEntries, type PaymentKind, payments } from "../db/schema.ts";

export interface PaymentRecord {
  readonly id: number;
  readonly kind: PaymentKind;
  readonly createdAt: Date;
  readonly amount: number | null;
  readonly currency: string | null;
  readonly tokens: number;
  readonly shortfall: number;
  readonly stripeEventId: string;
  readonly checkoutSessionId: string | null;
  readonly paymentIntentId: string | null;
  readonly invoiceId: string | null;
  readonly subscriptionId: string | null;
  readonly chargeId: string | null;
  readonly disputeId: string | null;
  readonly detail: string | null;
  readonly ledgerEntry: {
    id: number;
    kind: string;
    grantDelta: number;
    packDelta: number;
    grantAfter: number;
    packAfter: number;
    reason: string | null;
  } | null;
}

/** The account's payments with their ledger rows, newest first. */
export async function listPayments(db: DbHandle, accountId: number, limit = 500): Promise<PaymentRecord[]> {
  const rows = await db.db
    .select({ payment: payments, ledger: ledgerEntries })
    .from(payments)
    .leftJoin(ledgerEntries, eq(ledgerEntries.id, payments.ledgerEntryId))
    .where(eq(payments.accountId, accountId))
    .orderBy(desc(payments.id))
    .limit(limit);
  return rows.map(({ payment: p, ledger: l }) => ({
    id: Number(p.id),
    kind: p.kind,
    createdAt: p.createdAt,
    amount: p.amount === null ? null : Number(p.amount),
    currency: p.currency,
    tokens: Number(p.tokens),
    shortfall: Number(p.shortfall),
    stripeEventId: p.stripeEventId,
    checkoutSessionId: p.checkoutSessionId,
    paymentIntentId: p.paymentIntentId,
    invoiceId: p.invoiceId,
    subscriptionId: p.subscriptionId,
    chargeId: p.chargeId,
    disputeId: p.disputeId,
    detail: p.detail,
    ledgerEntry: l
      ? {
          id: Number(l.id),
          kind: l.kind,
          grantDelta: Number(l.grantDelta),
          packDelta: Number(l.packDelta),
          grantAfter: Number(l.grantAfter),
          packAfter: Number(l.packAfter),
          reason: l.reason,
        }
      : null,
  }));
}
