/**
 * A payment row as the AdminService's Payment message.
 */
import { create } from "@bufbuild/protobuf";
import { type Payment, PaymentSchema } from "../../gen/signals/v1/admin_pb.js";
import type { PaymentRecord } from "../payments/queries.ts";

/** Converts one payment with its ledger row. */
export function paymentMessage(p: PaymentRecord): Payment {
  const l = p.ledgerEntry;
  return create(PaymentSchema, {
    id: BigInt(p.id),
    kind: p.kind,
    createdAt: p.createdAt.toISOString(),
    amount: BigInt(p.amount ?? 0),
    currency: p.currency ?? "",
    tokens: BigInt(p.tokens),
    shortfall: BigInt(p.shortfall),
    stripeEventId: p.stripeEventId,
    checkoutSessionId: p.checkoutSessionId ?? "",
    paymentIntentId: p.paymentIntentId ?? "",
    invoiceId: p.invoiceId ?? "",
    subscriptionId: p.subscriptionId ?? "",
    chargeId: p.chargeId ?? "",
    disputeId: p.disputeId ?? "",
    detail: p.detail ?? "",
    ledgerEntry: l
      ? {
          id: BigInt(l.id),
          kind: l.kind,
          grantDelta: BigInt(l.grantDelta),
          packDelta: BigInt(l.packDelta),
          grantAfter: BigInt(l.grantAfter),
          packAfter: BigInt(l.packAfter),
          reason: l.reason ?? "",
        }
      : undefined,
  });
}
