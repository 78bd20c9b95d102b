/**
 * The web side of payments, as small functions of (deps, request data) so they move easily
 * between routers: the Buy / Subscribe / Billing Portal form posts (already past the session,
 * Origin and CSRF checks of the caller) and the Stripe webhook, the one POST without a session,
 * which instead accepts nothing that Stripe has not signed.
 */
import type Stripe from "stripe";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { errorSummary } from "../logger.ts";
import { PAID_PLANS, type AccountSummary } from "../accounts/accounts.ts";
import { createPackCheckout, createPortalSession, createSubscriptionCheckout, type CheckoutDeps, type PaidPlan } from "../payments/checkout.ts";
import { handleStripeWebhook, MAX_WEBHOOK_BYTES, type WebhookAnswer } from "../payments/webhook.ts";
import type { BillingView } from "./billing-card.ts";
import { header, type WebRequest, type WebResponse } from "./http.ts";

export interface PaymentRouteDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** null when STRIPE_SECRET_KEY is not set: no buttons, webhook 404. */
  readonly stripe: Stripe | null;
}

/** What a payment form post answers: a redirect (to Stripe or back), or a message page. */
export type PaymentFormResult = { kind: "redirect"; location: string } | { kind: "message"; status: number; title: string; message: string };

const UNAVAILABLE: PaymentFormResult = {
  kind: "message",
  status: 502,
  title: "Payments are unavailable",
  message: "Stripe could not be reached just now. Nothing was charged. Try again in a moment.",
};
const OFF: PaymentFormResult = { kind: "message", status: 404, title: "Payments are off", message: "This service does not take payments." };

function checkoutDeps(deps: PaymentRouteDeps): CheckoutDeps | null {
  const settings = deps.config.payments.stripe;
  return deps.stripe && settings ? { db: deps.db, stripe: deps.stripe, settings, publicBaseUrl: deps.config.publicBaseUrl } : null;
}

const isActivePaid = (summary: AccountSummary, now: number) =>
  (PAID_PLANS as readonly string[]).includes(summary.plan) && summary.subscriptionUntil !== null && summary.subscriptionUntil.getTime() > now;

/** What the account page's payments card shows, or null when payments are off. */
export function billingView(deps: PaymentRouteDeps, summary: AccountSummary, csrfToken: string): BillingView | null {
  const settings = deps.config.payments.stripe;
  if (!deps.stripe || !settings) return null;
  const plans = isActivePaid(summary, deps.clock()) ? [] : PAID_PLANS.filter((plan) => settings.prices[plan] !== null);
  return { packs: deps.config.payments.tokenPacks, plans, hasCustomer: summary.stripeCustomerId !== null, csrfToken };
}

async function viaStripe(deps: PaymentRouteDeps, accountId: number, what: string, action: () => Promise<{ url: string }>): Promise<PaymentFormResult> {
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
export async function buyPack(deps: PaymentRouteDeps, account: AccountSummary, form: URLSearchParams): Promise<PaymentFormResult> {
  const checkout = checkoutDeps(deps);
  if (!checkout) return OFF;
  const pack = deps.config.payments.tokenPacks.find((p) => p.id === form.get("pack"));
  if (!pack) return { kind: "message", status: 400, title: "No such pack", message: "That Token pack is not on offer. Nothing was charged." };
  return viaStripe(deps, account.accountId, "pack checkout", () => createPackCheckout(checkout, account, pack));
}

/** "Subscribe": a Checkout Session in subscription mode, unless a paid plan is already active. */
export async function subscribe(deps: PaymentRouteDeps, account: AccountSummary, form: URLSearchParams): Promise<PaymentFormResult> {
  const checkout = checkoutDeps(deps);
  if (!checkout) return OFF;
  const plan = form.get("plan");
  if ((plan !== "node" && plan !== "founding_seat") || checkout.settings.prices[plan] === null) {
    return { kind: "message", status: 400, title: "No such plan", message: "That plan is not on offer. Nothing was charged." };
  }
  if (isActivePaid(account, deps.clock())) {
    return { kind: "message", status: 409, title: "Already subscribed", message: "Your plan is active. Change or cancel it with Manage billing." };
  }
  return viaStripe(deps, account.accountId, "subscription checkout", () => createSubscriptionCheckout(checkout, account, plan as PaidPlan));
}

/** "Manage billing": a Billing Portal session for the account's Stripe Customer. */
export async function openBillingPortal(deps: PaymentRouteDeps, account: AccountSummary): Promise<PaymentFormResult> {
  const checkout = checkoutDeps(deps);
  if (!checkout) return OFF;
  return viaStripe(deps, account.accountId, "billing portal session", () => createPortalSession(checkout, account));
}

async function readRawBody(req: WebRequest): Promise<Buffer | null> {
  if (Number(header(req, "content-length") ?? "0") > MAX_WEBHOOK_BYTES) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_WEBHOOK_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** POST /webhooks/stripe: 404 when payments are off, else the verified event applied once. */
export async function stripeWebhookAnswer(deps: PaymentRouteDeps, req: WebRequest): Promise<WebhookAnswer | { status: 404 | 413; body: Record<string, unknown> }> {
  const settings = deps.config.payments.stripe;
  if (!deps.stripe || !settings) return { status: 404, body: { ok: false, error: "not_found", message: "No such route." } };
  const rawBody = await readRawBody(req);
  if (rawBody === null) return { status: 413, body: { ok: false, error: "payload_too_large", message: "The body is too large." } };
  return handleStripeWebhook(
    { db: deps.db, logger: deps.logger, limits: deps.config.limits, payments: deps.config.payments, now: deps.clock, stripe: deps.stripe, settings },
    { rawBody, signature: header(req, "stripe-signature") },
  );
}

/** Writes a webhook answer as JSON (never a page: Stripe reads the status only). */
export function sendWebhookAnswer(res: WebResponse, answer: { status: number; body: Record<string, unknown> }): void {
  const body = JSON.stringify(answer.body);
  (res as import("node:http").ServerResponse).writeHead(answer.status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
  });
  res.end(body);
}
