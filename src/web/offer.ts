/**
 * What the service sells, as the public pages and the account page state it: the plans with the
 * price Stripe charges (payments/plan-prices.ts), the Token packs of the catalogue
 * (TOKEN_PACKS, the amounts Checkout is created with) and the limits every paid call meets.
 * Read from configuration and Stripe, never written twice.
 */
import type { Limits } from "../config.ts";
import type { PaidPlan } from "../payments/checkout.ts";
import type { TokenPack } from "../payments/config.ts";
import type { PlanPrice, PlanPrices } from "../payments/plan-prices.ts";
import { formatMoney } from "./billing-card.ts";
import { formatInteger } from "./format.ts";

export interface Offer {
  /** Stripe is configured: members can subscribe and buy packs on the account page. */
  readonly paymentsOn: boolean;
  readonly plans: ReadonlyArray<{ plan: PaidPlan; offered: boolean; price: PlanPrice | null }>;
  readonly packs: readonly TokenPack[];
  readonly limits: Pick<Limits, "dailyCap" | "monthlyGrant" | "maxSymbols" | "lowBalancePct">;
}

/** The offer now (plan prices from memory, or from Stripe at most every few minutes). */
export async function loadOffer(deps: {
  planPrices: PlanPrices;
  paymentsOn: boolean;
  packs: readonly TokenPack[];
  limits: Limits;
}): Promise<Offer> {
  return {
    paymentsOn: deps.paymentsOn,
    plans: await deps.planPrices.all(),
    packs: deps.paymentsOn ? deps.packs : [],
    limits: {
      dailyCap: deps.limits.dailyCap,
      monthlyGrant: deps.limits.monthlyGrant,
      maxSymbols: deps.limits.maxSymbols,
      lowBalancePct: deps.limits.lowBalancePct,
    },
  };
}

/** "USD 49.00 / month", or null when Stripe did not say. */
export function planPriceText(price: PlanPrice | null): string | null {
  return price === null ? null : `${formatMoney(price.unitAmount, price.currency)} / ${price.interval}`;
}

/** "5,000 Tokens for USD 25.00". */
export function packText(pack: TokenPack): string {
  return `${formatInteger(pack.tokens)} Tokens for ${formatMoney(pack.unitAmount, pack.currency)}`;
}

/** Calls a month of polling every `minutes` (a 30-day month), the specification's example. */
export function callsPerMonth(minutes: number): number {
  return Math.round((30 * 24 * 60) / minutes);
}
