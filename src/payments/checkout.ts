/**
 * Starting payments from the account page: the account's Stripe Customer, Checkout Sessions
 * for a Token pack (`payment` mode) or a plan (`subscription` mode), and Billing Portal
 * sessions. Nothing is credited here: Tokens and plans move only from signed webhooks.
 */

import { and, eq, isNull } from "drizzle-orm";
import type Stripe from "stripe";
import type { DbHandle } from "../db/client.ts";
import { accounts } from "../db/schema.ts";
import type { StripeSettings, TokenPack } from "./config.ts";
import type { StripeClient } from "./stripe-client.ts";

export type PaidPlan = "node" | "founding_seat";

export interface CheckoutDeps {
  readonly db: DbHandle;
  readonly stripe: StripeClient;
  readonly settings: StripeSettings;
  /** Where members reach the web pages (success, cancel and return URLs). */
  readonly publicBaseUrl: string;
}

/** The account's Stripe Customer id, creating the Customer on first use. */
export async function ensureStripeCustomer(
  deps: CheckoutDeps,
  account: { accountId: number; email: string },
): Promise<string> {
  const [row] = await deps.db.db
    .select({ customerId: accounts.stripeCustomerId })
    .from(accounts)
    .where(eq(accounts.id, account.accountId));
  if (row?.customerId) return row.customerId;
  // The idempotency key makes two concurrent first checkouts get the same Customer from Stripe.
  const customer = await (await deps.stripe()).customers.create(
    { email: account.email, metadata: { account_id: String(account.accountId) } },
    { idempotencyKey: `customer-for-account-${account.accountId}` },
  );
  const stored = await deps.db.db
    .update(accounts)
    .set({ stripeCustomerId: customer.id })
    .where(and(eq(accounts.id, account.accountId), isNull(accounts.stripeCustomerId)))
    .returning({ customerId: accounts.stripeCustomerId });
  if (stored.length > 0) return customer.id;
  const [again] = await deps.db.db
    .select({ customerId: accounts.stripeCustomerId })
    .from(accounts)
    .where(eq(accounts.id, account.accountId));
  return again!.customerId!;
}

/** A Checkout Session for the account's Customer, returning to the account page; its url is where the member pays. */
async function checkoutSession(
  deps: CheckoutDeps,
  account: { accountId: number; email: string },
  params: Pick<
    Stripe.Checkout.SessionCreateParams,
    "mode" | "line_items" | "metadata" | "payment_intent_data" | "subscription_data"
  >,
): Promise<{ id: string; url: string }> {
  const customer = await ensureStripeCustomer(deps, account);
  const session = await (await deps.stripe()).checkout.sessions.create({
    ...params,
    customer,
    client_reference_id: String(account.accountId),
    success_url: `${deps.publicBaseUrl}/account?checkout=success`,
    cancel_url: `${deps.publicBaseUrl}/account?checkout=cancelled`,
  });
  if (!session.url) throw new Error(`Stripe returned Checkout Session ${session.id} without a url`);
  return { id: session.id, url: session.url };
}

/** A Checkout Session in `payment` mode for one pack, with the account and pack in its metadata. */
export function createPackCheckout(
  deps: CheckoutDeps,
  account: { accountId: number; email: string },
  pack: TokenPack,
): Promise<{ id: string; url: string }> {
  const metadata = {
    account_id: String(account.accountId),
    kind: "pack",
    pack_id: pack.id,
    tokens: String(pack.tokens),
  };
  return checkoutSession(deps, account, {
    mode: "payment",
    line_items: [
      {
        quantity: 1,
        price_data: {
          currency: pack.currency,
          unit_amount: pack.unitAmount,
          product_data: { name: `${pack.tokens.toLocaleString("en-US")} Tokens` },
        },
      },
    ],
    metadata,
    payment_intent_data: { metadata },
  });
}

/** A Checkout Session in `subscription` mode for a plan's recurring Price. */
export function createSubscriptionCheckout(
  deps: CheckoutDeps,
  account: { accountId: number; email: string },
  plan: PaidPlan,
): Promise<{ id: string; url: string }> {
  const price = deps.settings.prices[plan];
  if (!price) return Promise.reject(new Error(`no Stripe Price is configured for plan ${plan}`));
  const metadata = { account_id: String(account.accountId), kind: "subscription", plan };
  return checkoutSession(deps, account, {
    mode: "subscription",
    line_items: [{ price, quantity: 1 }],
    metadata,
    subscription_data: { metadata },
  });
}

/** A Billing Portal session for the account's Customer (card, invoices, cancellation). */
export async function createPortalSession(
  deps: CheckoutDeps,
  account: { accountId: number; email: string },
): Promise<{ url: string }> {
  const customer = await ensureStripeCustomer(deps, account);
  const session = await (await deps.stripe()).billingPortal.sessions.create({
    customer,
    return_url: `${deps.publicBaseUrl}/account`,
  });
  return { url: session.url };
}
