/**
 * The payment effects, each one call of a SQL function (src/db/functions/stripe_*.sql): one
 * statement, one transaction, with the Stripe event id recorded in that same transaction.
 */
import { sql } from "drizzle-orm";
import { lowBalanceThreshold } from "../billing/tokens.ts";
import { mytMonth } from "../clock.ts";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";

/** What every applied event carries. */
export interface EventKey {
  readonly eventId: string;
  readonly type: string;
  /** Stripe's `created` of the event, epoch ms. */
  readonly created: number;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export interface TokenPackPayment {
  readonly accountId: number;
  readonly tokens: number;
  readonly sessionId: string;
  readonly paymentIntentId: string | null;
  readonly amount: number | null;
  readonly currency: string | null;
}

export type PackOutcome = "credited" | "duplicate_event" | "duplicate_session" | "unmatched";

/** Adds a Token pack to the account once per event and once per Checkout Session. */
export async function addTokenPack(
  db: DbHandle,
  event: EventKey,
  pack: TokenPackPayment,
  limits: Limits,
): Promise<{ outcome: PackOutcome; ledgerEntryId: number | null }> {
  const stripeIds = pack.paymentIntentId ? `${pack.sessionId}, ${pack.paymentIntentId}` : pack.sessionId;
  const reason = `Token pack of ${pack.tokens} (Stripe ${stripeIds})`;
  const [row] = await db.rows<{ outcome: PackOutcome; ledger_entry_id: number | string | null }>(sql`
    SELECT outcome, ledger_entry_id FROM stripe_credit_pack(${event.eventId}, ${event.type},
    ${iso(event.created)}::timestamptz, ${pack.accountId}::bigint,
      ${pack.tokens}::bigint, ${pack.sessionId}, ${pack.paymentIntentId}, ${pack.amount}::bigint, ${pack.currency},
      ${reason},
      ${lowBalanceThreshold(limits)}::bigint)`);
  return { outcome: row!.outcome, ledgerEntryId: row!.ledger_entry_id === null ? null : Number(row!.ledger_entry_id) };
}

export interface SubscriptionFact {
  readonly accountId: number;
  readonly subscriptionId: string;
  readonly customerId: string | null;
  readonly plan: string | null;
  /** Timestamp (ms) of the state `plan`/`status` describe; null when they are only a first guess. */
  readonly version: number | null;
  readonly status: string | null;
  /** End (ms) of a paid period. */
  readonly paidThrough: number | null;
  /** When the subscription ended (a deletion), ms. */
  readonly endedAt: number | null;
  readonly invoice: { id: string; amount: number | null; currency: string | null } | null;
}

/** Applies a subscription fact once; returns the account's plan and subscription end after it. */
export async function applySubscriptionFact(
  db: DbHandle,
  event: EventKey,
  fact: SubscriptionFact,
  options: { limits: Limits; graceMs: number; now: number },
): Promise<{
  outcome: "applied" | "duplicate_event" | "unmatched";
  plan: string | null;
  subscriptionUntil: Date | null;
}> {
  const [row] = await db.rows<{
    outcome: "applied" | "duplicate_event" | "unmatched";
    plan: string | null;
    subscription_until: Date | string | null;
  }>(sql`
    SELECT outcome, plan, subscription_until FROM stripe_subscription_event(${event.eventId}, ${event.type},
    ${iso(event.created)}::timestamptz,
      ${fact.accountId}::bigint, ${fact.subscriptionId}, ${fact.customerId}, ${fact.plan},
      ${iso(fact.version)}::timestamptz, ${fact.status},
      ${iso(fact.paidThrough)}::timestamptz, ${iso(fact.endedAt)}::timestamptz,
      ${fact.invoice?.id ?? null}, ${fact.invoice?.amount ?? null}::bigint, ${fact.invoice?.currency ?? null},
      ${options.graceMs}::bigint, ${iso(options.now)}::timestamptz, ${mytMonth(options.now)}::date,
      ${options.limits.monthlyGrant}::bigint,
      ${lowBalanceThreshold(options.limits)}::bigint)`);
  return {
    outcome: row!.outcome,
    plan: row!.plan,
    subscriptionUntil: row!.subscription_until === null ? null : new Date(row!.subscription_until),
  };
}

export type RefundOutcome = "taken_back" | "shortfall" | "nothing_due" | "duplicate_event" | "unmatched";

/** Takes back a refunded pack's Tokens (never below zero; the shortfall is recorded). */
export async function takeBackRefund(
  db: DbHandle,
  event: EventKey,
  refund: { chargeId: string; paymentIntentId: string | null; amountRefunded: number; currency: string | null },
  limits: Limits,
): Promise<{ outcome: RefundOutcome; accountId: number | null; tokens: number; shortfall: number }> {
  const [row] = await db.rows<{
    outcome: RefundOutcome;
    account_id: number | string | null;
    tokens: number | string | null;
    shortfall: number | string | null;
  }>(sql`
    SELECT outcome, account_id, tokens, shortfall FROM stripe_refund(${event.eventId}, ${event.type},
    ${iso(event.created)}::timestamptz,
      ${refund.chargeId}, ${refund.paymentIntentId}, ${refund.amountRefunded}::bigint, ${refund.currency},
      ${lowBalanceThreshold(limits)}::bigint)`);
  return {
    outcome: row!.outcome,
    accountId: row!.account_id === null ? null : Number(row!.account_id),
    tokens: Number(row!.tokens ?? 0),
    shortfall: Number(row!.shortfall ?? 0),
  };
}

/** Records a dispute once (no Tokens move). */
export async function recordDispute(
  db: DbHandle,
  event: EventKey,
  dispute: {
    disputeId: string;
    chargeId: string | null;
    paymentIntentId: string | null;
    amount: number | null;
    currency: string | null;
    reason: string | null;
  },
): Promise<{ outcome: "recorded" | "unmatched" | "duplicate_event"; accountId: number | null }> {
  const [row] = await db.rows<{
    outcome: "recorded" | "unmatched" | "duplicate_event";
    account_id: number | string | null;
  }>(sql`
    SELECT outcome, account_id FROM stripe_dispute(${event.eventId}, ${event.type}, ${iso(event.created)}::timestamptz,
    ${dispute.disputeId},
      ${dispute.chargeId}, ${dispute.paymentIntentId}, ${dispute.amount}::bigint, ${dispute.currency},
      ${dispute.reason})`);
  return { outcome: row!.outcome, accountId: row!.account_id === null ? null : Number(row!.account_id) };
}

/** The account of a Stripe Customer, or null. */
export async function accountOfCustomer(db: DbHandle, customerId: string | null): Promise<number | null> {
  if (!customerId) return null;
  const [row] = await db.rows<{ id: number | string }>(
    sql`SELECT id FROM accounts WHERE stripe_customer_id = ${customerId}`,
  );
  return row ? Number(row.id) : null;
}

/** The account a Stripe subscription is linked to, or null. */
export async function accountOfSubscription(db: DbHandle, subscriptionId: string | null): Promise<number | null> {
  if (!subscriptionId) return null;
  const [row] = await db.rows<{ account_id: number | string }>(
    sql`SELECT account_id FROM stripe_subscriptions WHERE subscription_id = ${subscriptionId}`,
  );
  return row ? Number(row.account_id) : null;
}
