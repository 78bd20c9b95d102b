/**
 * The web side of payments, as small functions of (deps, request data) that routes/payments.ts
 * calls: the Buy / Subscribe / Billing Portal form posts (already past the session,
 * Origin and CSRF checks of the caller) and the Stripe webhook, the one POST without a session,
 * which instead accepts nothing that Stripe has not signed.
 */
import type { Logger } from "pino";
import type { AccountSummary } from "../accounts/accounts.ts";
import { mayCallPaidEndpoint, PAID_PLANS, viewerOf } from "../accounts/entitlement.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { errorBodyOf } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import {
  type CheckoutDeps,
  createPackCheckout,
  createPortalSession,
  createSubscriptionCheckout,
  type PaidPlan,
} from "../payments/checkout.ts";
import type { StripeClient } from "../payments/stripe-client.ts";
import { handleStripeWebhook, type WebhookAnswer } from "../payments/webhook.ts";
import type { BillingView } from "./billing-card.ts";

export interface PaymentRouteDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** null when STRIPE_SECRET_KEY is not set: no buttons, webhook 404. */
  readonly stripe: StripeClient | null;
}

/** What a payment form post answers: a redirect (to Stripe or back), or a message page. */
export type PaymentFormResult =
  | { kind: "redirect"; location: string }
  | { kind: "message"; status: number; title: string; message: string };

const UNAVAILABLE: PaymentFormResult = {
  kind: "message",
  status: 502,
  title: "Payments are unavailable",
  message: "Stripe could not be reached just now. Nothing was charged. Try again in a moment.",
};
const WEBHOOK_OFF = { status: 404 as const, body: { ...errorBodyOf("not_found", "No such route.") } };
const OFF: PaymentFormResult = {
  kind: "message",
  status: 404,
  title: "Payments are off",
  message: "This service does not take payments.",
};

function checkoutDeps(deps: PaymentRouteDeps): CheckoutDeps | null {
  const settings = deps.config.payments.stripe;
  return deps.stripe && settings
    ? { db: deps.db, stripe: deps.stripe, settings, publicBaseUrl: deps.config.publicBaseUrl }
    : null;
}

const isActivePaid = (summary: AccountSummary, now: number) => mayCallPaidEndpoint(viewerOf(summary, now));

/** What the account page's payments card shows, or null when payments are off. */
export function billingView(
  deps: PaymentRouteDeps,
  summary: AccountSummary,
  csrfToken: string,
  planPrices: BillingView["planPrices"],
): BillingView | null {
  const settings = deps.config.payments.stripe;
  if (!deps.stripe || !settings) return null;
  const active = isActivePaid(summary, deps.clock());
  const plans = active ? [] : PAID_PLANS.filter((plan) => settings.prices[plan] !== null);
  return {
    packs: deps.config.payments.tokenPacks,
    plans,
    planPrices,
    mayBuyPacks: active,
    hasCustomer: summary.stripeCustomerId !== null,
    csrfToken,
  };
}

async function viaStripe(
  deps: PaymentRouteDeps,
  accountId: number,
  what: string,
  action: () => Promise<{ url: string }>,
): Promise<PaymentFormResult> {
  try {
    const { url } = await action();
    deps.logger.info({ accountId }, `${what} started`);
    return { kind: "redirect", location: url };
  } catch (err) {
    deps.logger.error({ accountId, err: errorSummary(err) }, `${what} could not be started`);
    return UNAVAILABLE;
  }
}

/** "Buy": a Checkout Session for the chosen pack of the catalogue, for the session's account only. */
export async function buyPack(
  deps: PaymentRouteDeps,
  account: AccountSummary,
  form: URLSearchParams,
): Promise<PaymentFormResult> {
  const checkout = checkoutDeps(deps);
  if (!checkout) return OFF;
  const pack = deps.config.payments.tokenPacks.find((p) => p.id === form.get("pack"));
  if (!pack)
    return {
      kind: "message",
      status: 400,
      title: "No such pack",
      message: "That Token pack is not on offer. Nothing was charged.",
    };
  // Tokens are spent only by API calls: a plan that cannot make them is offered the plan, not a pack.
  if (!isActivePaid(account, deps.clock())) {
    return {
      kind: "message",
      status: 403,
      title: "Subscribe first",
      message:
        "Token packs are spent by API calls, which need the node or founding-seat plan with " +
        "an active subscription. Choose a plan on your account page. Nothing was charged.",
    };
  }
  return viaStripe(deps, account.accountId, "pack checkout", () => createPackCheckout(checkout, account, pack));
}

/** "Subscribe": a Checkout Session in subscription mode, unless a paid plan is already active. */
export async function subscribe(
  deps: PaymentRouteDeps,
  account: AccountSummary,
  form: URLSearchParams,
): Promise<PaymentFormResult> {
  const checkout = checkoutDeps(deps);
  if (!checkout) return OFF;
  const plan = form.get("plan");
  if ((plan !== "node" && plan !== "founding_seat") || checkout.settings.prices[plan] === null) {
    return {
      kind: "message",
      status: 400,
      title: "No such plan",
      message: "That plan is not on offer. Nothing was charged.",
    };
  }
  if (isActivePaid(account, deps.clock())) {
    return {
      kind: "message",
      status: 409,
      title: "Already subscribed",
      message: "Your plan is active. Change or cancel it with Manage billing.",
    };
  }
  return viaStripe(deps, account.accountId, "subscription checkout", () =>
    createSubscriptionCheckout(checkout, account, plan as PaidPlan),
  );
}

/** "Manage billing": a Billing Portal session for the account's Stripe Customer. */
export async function openBillingPortal(deps: PaymentRouteDeps, account: AccountSummary): Promise<PaymentFormResult> {
  const checkout = checkoutDeps(deps);
  if (!checkout) return OFF;
  return viaStripe(deps, account.accountId, "billing portal session", () => createPortalSession(checkout, account));
}

/** POST /webhooks/stripe: 404 when payments are off, else the verified event applied once. */
export async function stripeWebhookAnswer(
  deps: PaymentRouteDeps,
  request: { rawBody: Buffer; signature: string | undefined },
): Promise<WebhookAnswer | { status: 404; body: Record<string, unknown> }> {
  const settings = deps.config.payments.stripe;
  if (!deps.stripe || !settings) return WEBHOOK_OFF;
  return handleStripeWebhook(
    {
      db: deps.db,
      logger: deps.logger,
      limits: deps.config.limits,
      payments: deps.config.payments,
      now: deps.clock,
      stripe: deps.stripe,
      settings,
    },
    request,
  );
}
