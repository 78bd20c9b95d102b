/**
 * What each Stripe event does. Every effect is one SQL function call that also records the
 * event id (stripe-store.ts), so handlers can run any number of times for one event. Events
 * are matched to accounts through our own Customer ids first, then through the metadata this
 * service wrote when it created the Checkout Session (never anything a member typed).
 */

import type { Logger } from "pino";
import type Stripe from "stripe";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import type { PaymentsConfig } from "./config.ts";
import {
  at,
  idOf,
  int,
  invoiceLines,
  invoiceSubscription,
  invoiceSubscriptionMetadata,
  linePrice,
  metadataInt,
  seconds,
  subscriptionPrice,
  text,
} from "./stripe-objects.ts";
import {
  accountOfCustomer,
  accountOfSubscription,
  addTokenPack,
  applySubscriptionFact,
  type EventKey,
  recordDispute,
  takeBackRefund,
} from "./stripe-store.ts";

export interface EventDeps {
  readonly db: DbHandle;
  readonly logger: Logger;
  readonly limits: Limits;
  readonly payments: PaymentsConfig;
  readonly now: () => number;
}

/** How an event was handled (for the log and the response body). */
export type HandledAs = string;

const MAX_TOKENS = 10_000_000;
const MAX_ACCOUNT_ID = Number.MAX_SAFE_INTEGER;

/** The plan a recurring Price id stands for, by configuration. */
function planOfPrice(deps: EventDeps, price: string | null): string | null {
  const prices = deps.payments.stripe?.prices;
  if (!price || !prices) return null;
  if (price === prices.node) return "node";
  if (price === prices.founding_seat) return "founding_seat";
  return null;
}

const planOfMetadata = (value: unknown): string | null =>
  value === "node" || value === "founding_seat" ? value : null;

/**
 * The account of a subscription event: by our Customer, by a subscription already linked to an
 * account, then by the metadata this service put on the Checkout Session and Subscription.
 */
async function accountFor(
  deps: EventDeps,
  customerId: string | null,
  subscriptionId: string | null,
  metadataAccountId: unknown,
): Promise<number | null> {
  return (
    (await accountOfCustomer(deps.db, customerId)) ??
    (await accountOfSubscription(deps.db, subscriptionId)) ??
    metadataInt(metadataAccountId, MAX_ACCOUNT_ID)
  );
}

/**
 * Thrown for a subscription event that cannot be tied to an account yet: nothing is recorded
 * and the webhook answers 500, so Stripe delivers it again later, when the event that links it
 * (the Checkout Session's completion) may have arrived. Events are never dropped for arriving early.
 */
export class NotYetMatched extends Error {
  override name = "NotYetMatched";
}

async function onCheckoutPaid(deps: EventDeps, key: EventKey, session: Stripe.Checkout.Session): Promise<HandledAs> {
  const metadata = session.metadata ?? {};
  if (session.mode === "subscription") {
    const subscriptionId = idOf(session.subscription);
    const customerId = idOf(session.customer);
    const accountId = await accountFor(
      deps,
      customerId,
      subscriptionId,
      metadata.account_id ?? session.client_reference_id,
    );
    if (!subscriptionId || accountId === null)
      return unmatched(deps, key, "subscription checkout without a known account or subscription");
    // Links the subscription to the account; the plan is only a first guess until its own state or invoice arrives.
    const result = await applySubscriptionFact(
      deps.db,
      key,
      {
        accountId,
        subscriptionId,
        customerId,
        plan: planOfMetadata(metadata.plan),
        version: null,
        status: null,
        paidThrough: null,
        endedAt: null,
        invoice: null,
      },
      { limits: deps.limits, graceMs: deps.payments.subscriptionGraceMs, now: deps.now() },
    );
    return result.outcome;
  }
  if (session.mode !== "payment" || metadata.kind !== "pack") return "ignored";
  if (session.payment_status !== "paid") {
    deps.logger.info(
      { eventId: key.eventId, session: session.id, paymentStatus: session.payment_status },
      "pack checkout completed, payment still pending",
    );
    return "pending";
  }
  const accountId = metadataInt(metadata.account_id, MAX_ACCOUNT_ID);
  const tokens = metadataInt(metadata.tokens, MAX_TOKENS);
  if (accountId === null || tokens === null)
    return unmatched(deps, key, "pack checkout without account_id or tokens metadata");
  const result = await addTokenPack(
    deps.db,
    key,
    {
      accountId,
      tokens,
      sessionId: session.id,
      paymentIntentId: idOf(session.payment_intent),
      amount: int(session.amount_total),
      currency: text(session.currency),
    },
    deps.limits,
  );
  if (result.outcome === "credited")
    deps.logger.info({ eventId: key.eventId, accountId, tokens, session: session.id }, "token pack credited");
  return result.outcome;
}

async function onInvoicePaid(deps: EventDeps, key: EventKey, invoice: Stripe.Invoice): Promise<HandledAs> {
  const subscriptionId = invoiceSubscription(invoice);
  if (!subscriptionId) return "ignored"; // a one-off invoice, not a plan
  const customerId = idOf(invoice.customer);
  const metadata = invoiceSubscriptionMetadata(invoice);
  const accountId = await accountFor(deps, customerId, subscriptionId, metadata.account_id);
  if (accountId === null)
    throw new NotYetMatched(
      `paid invoice of subscription ${subscriptionId} for a customer not linked to an account yet`,
    );
  const lines = invoiceLines(invoice);
  // On a plan change the invoice also holds a negative proration line for the old plan: the
  // plan is the one charged for, the last positive line with a configured Price.
  const charged = lines.filter((l) => (int(at(l, "amount")) ?? 0) > 0);
  const planOfLines = (ls: unknown[]) =>
    ls.map((l) => planOfPrice(deps, linePrice(l))).findLast((p) => p !== null) ?? null;
  const plan = planOfLines(charged) ?? planOfLines(lines) ?? planOfMetadata(metadata.plan);
  const periodEnds = lines.map((l) => seconds(at(l, "period", "end"))).filter((e): e is number => e !== null);
  if (plan === null || periodEnds.length === 0)
    return unmatched(deps, key, `paid invoice ${invoice.id} names no configured plan Price or no period`);
  const paidAt = seconds(at(invoice, "status_transitions", "paid_at")) ?? key.created;
  const result = await applySubscriptionFact(
    deps.db,
    key,
    {
      accountId,
      subscriptionId,
      customerId,
      plan,
      version: paidAt,
      status: null,
      paidThrough: Math.max(...periodEnds),
      endedAt: null,
      invoice: { id: invoice.id, amount: int(invoice.amount_paid), currency: text(invoice.currency) },
    },
    { limits: deps.limits, graceMs: deps.payments.subscriptionGraceMs, now: deps.now() },
  );
  deps.logger.info(
    { eventId: key.eventId, accountId, subscriptionId, plan: result.plan, until: result.subscriptionUntil },
    "subscription invoice paid",
  );
  return result.outcome;
}

async function onSubscriptionChanged(
  deps: EventDeps,
  key: EventKey,
  subscription: Stripe.Subscription,
  deleted: boolean,
): Promise<HandledAs> {
  const customerId = idOf(subscription.customer);
  const accountId = await accountFor(deps, customerId, subscription.id, subscription.metadata?.account_id);
  if (accountId === null)
    throw new NotYetMatched(`subscription ${subscription.id} of a customer not linked to an account yet`);
  const ended = deleted || subscription.status === "canceled";
  const endedAt = ended ? (seconds(subscription.ended_at) ?? seconds(subscription.canceled_at) ?? key.created) : null;
  const result = await applySubscriptionFact(
    deps.db,
    key,
    {
      accountId,
      subscriptionId: subscription.id,
      customerId,
      plan: planOfPrice(deps, subscriptionPrice(subscription)) ?? planOfMetadata(subscription.metadata?.plan),
      version: key.created,
      status: text(subscription.status),
      paidThrough: null,
      endedAt,
      invoice: null,
    },
    { limits: deps.limits, graceMs: deps.payments.subscriptionGraceMs, now: deps.now() },
  );
  deps.logger.info(
    {
      eventId: key.eventId,
      accountId,
      subscriptionId: subscription.id,
      status: subscription.status,
      until: result.subscriptionUntil,
    },
    deleted ? "subscription deleted" : "subscription updated",
  );
  return result.outcome;
}

async function onChargeRefunded(deps: EventDeps, key: EventKey, charge: Stripe.Charge): Promise<HandledAs> {
  const amountRefunded = int(charge.amount_refunded);
  if (amountRefunded === null || amountRefunded <= 0) return "ignored";
  const result = await takeBackRefund(
    deps.db,
    key,
    {
      chargeId: charge.id,
      paymentIntentId: idOf(charge.payment_intent),
      amountRefunded,
      currency: text(charge.currency),
    },
    deps.limits,
  );
  const fields = {
    eventId: key.eventId,
    charge: charge.id,
    accountId: result.accountId,
    tokens: result.tokens,
    shortfall: result.shortfall,
  };
  if (result.outcome === "shortfall")
    deps.logger.warn(
      fields,
      "refund: the balance was too low to take every Token back; the shortfall is recorded for the operator",
    );
  else if (result.outcome === "unmatched")
    deps.logger.warn(fields, "refund of a payment that is not a Token pack: nothing taken back");
  else deps.logger.info(fields, "refund processed");
  return result.outcome;
}

async function onDispute(deps: EventDeps, key: EventKey, dispute: Stripe.Dispute): Promise<HandledAs> {
  const result = await recordDispute(deps.db, key, {
    disputeId: dispute.id,
    chargeId: idOf(dispute.charge),
    paymentIntentId: idOf(dispute.payment_intent),
    amount: int(dispute.amount),
    currency: text(dispute.currency),
    reason: text(dispute.reason),
  });
  if (result.outcome !== "duplicate_event") {
    deps.logger.warn(
      {
        eventId: key.eventId,
        dispute: dispute.id,
        accountId: result.accountId,
        amount: dispute.amount,
        reason: dispute.reason,
      },
      "payment disputed: answer it in the Stripe Dashboard",
    );
  }
  return result.outcome;
}

function unmatched(deps: EventDeps, key: EventKey, why: string): HandledAs {
  deps.logger.error({ eventId: key.eventId, type: key.type }, `stripe event not applied: ${why}`);
  return "unmatched";
}

/** The events the webhook endpoint must send (what handleStripeEvent reads; `signals doctor` checks them). */
export const STRIPE_WEBHOOK_EVENTS = [
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "checkout.session.async_payment_failed",
  "invoice.paid",
  "invoice.payment_failed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "charge.refunded",
  "charge.dispute.created",
] as const;

/** Applies one verified event; resolves to how it was handled. Throws only on a failure worth a retry. */
export async function handleStripeEvent(deps: EventDeps, event: Stripe.Event): Promise<HandledAs> {
  const key: EventKey = { eventId: event.id, type: event.type, created: (int(event.created) ?? 0) * 1000 };
  const object = event.data.object as unknown;
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
      return onCheckoutPaid(deps, key, object as Stripe.Checkout.Session);
    case "checkout.session.async_payment_failed":
      deps.logger.info(
        { eventId: key.eventId, session: idOf(object) },
        "delayed pack payment failed; nothing credited",
      );
      return "ignored";
    case "invoice.paid":
      return onInvoicePaid(deps, key, object as Stripe.Invoice);
    case "invoice.payment_failed":
      deps.logger.info(
        { eventId: key.eventId, invoice: idOf(object) },
        "subscription payment failed; the plan lapses at its period end unless a retry succeeds",
      );
      return "ignored";
    case "customer.subscription.created":
    case "customer.subscription.updated":
      return onSubscriptionChanged(deps, key, object as Stripe.Subscription, false);
    case "customer.subscription.deleted":
      return onSubscriptionChanged(deps, key, object as Stripe.Subscription, true);
    case "charge.refunded":
      return onChargeRefunded(deps, key, object as Stripe.Charge);
    case "charge.dispute.created":
      return onDispute(deps, key, object as Stripe.Dispute);
    default:
      return "ignored";
  }
}
