/**
 * What each plan costs, as Stripe will charge it: the plans' Prices live in Stripe
 * (STRIPE_PRICE_NODE, STRIPE_PRICE_FOUNDING_SEAT name them), so their amounts are read from
 * Stripe through its client and kept for a while, never typed a second time into our
 * configuration where they could drift. A page that cannot learn a price says "shown at
 * checkout" rather than guessing.
 */

import type { PaidPlan } from "./checkout.ts";
import type { StripeSettings } from "./config.ts";
import type { StripeClient } from "./stripe-client.ts";

/** A plan's recurring price in its currency's minor unit. */
export interface PlanPrice {
  readonly unitAmount: number;
  readonly currency: string;
  /** "month", "year", … as Stripe names the interval. */
  readonly interval: string;
}

/** The plans Stripe sells, in the order the pages list them. */
const SOLD_PLANS: readonly PaidPlan[] = ["node", "founding_seat"];
type PaidPlanName = PaidPlan;

/** How long a price read from Stripe is reused; a failed read is retried after RETRY_MS. */
const KEEP_MS = 10 * 60_000;
const RETRY_MS = 30_000;
/** A page waits at most this long for Stripe before it renders without the price. */
const READ_TIMEOUT_MS = 3_000;

/** Reads and keeps the plans' prices; `get` never throws. */
export class PlanPrices {
  private readonly kept = new Map<
    PaidPlanName,
    { price: PlanPrice | null; until: number; pending: Promise<PlanPrice | null> | null }
  >();
  private readonly stripe: StripeClient | null;
  private readonly settings: StripeSettings | null;
  private readonly clock: () => number;
  constructor(stripe: StripeClient | null, settings: StripeSettings | null, clock: () => number) {
    this.stripe = stripe;
    this.settings = settings;
    this.clock = clock;
  }

  /** Every paid plan with its price (null: not offered, or Stripe did not say). */
  async all(): Promise<ReadonlyArray<{ plan: PaidPlanName; offered: boolean; price: PlanPrice | null }>> {
    return Promise.all(
      SOLD_PLANS.map(async (plan) => ({ plan, offered: this.offered(plan), price: await this.get(plan) })),
    );
  }

  /** The plan can be subscribed to here (payments on and a Price configured). */
  offered(plan: PaidPlanName): boolean {
    return this.stripe !== null && this.settings !== null && this.settings.prices[plan] !== null;
  }

  /** The plan's price, from memory when fresh, else from Stripe (null when unknown). */
  async get(plan: PaidPlanName): Promise<PlanPrice | null> {
    if (!this.offered(plan)) return null;
    const now = this.clock();
    const entry = this.kept.get(plan);
    if (entry && entry.until > now) return entry.price;
    if (entry?.pending) return entry.pending;
    const pending = this.read(plan).then((price) => {
      this.kept.set(plan, { price, until: this.clock() + (price ? KEEP_MS : RETRY_MS), pending: null });
      return price;
    });
    this.kept.set(plan, { price: entry?.price ?? null, until: 0, pending });
    return pending;
  }

  private async read(plan: PaidPlanName): Promise<PlanPrice | null> {
    try {
      const stripe = await this.stripe!();
      const price = await stripe.prices.retrieve(this.settings!.prices[plan]!, undefined, {
        timeout: READ_TIMEOUT_MS,
        maxNetworkRetries: 0,
      });
      if (price.unit_amount === null || !price.active) return null;
      return {
        unitAmount: price.unit_amount,
        currency: price.currency,
        interval: price.recurring?.interval ?? "month",
      };
    } catch {
      return null;
    }
  }
}
