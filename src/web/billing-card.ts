/**
 * The account page's payments card: Token packs to buy, plans to subscribe to, and the
 * Billing Portal. Every button is a CSRF-protected POST; the account is always the session's.
 */

import type { PaidPlan } from "../payments/checkout.ts";
import type { TokenPack } from "../payments/config.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { formatInteger, planName } from "./format.ts";
import { html, type SafeHtml } from "./html.ts";

export interface BillingView {
  readonly packs: readonly TokenPack[];
  /** Plans offered for subscription (empty while a paid plan is active). */
  readonly plans: readonly PaidPlan[];
  /** Each offered plan's price as Stripe charges it ("USD 49.00 / month"), null when Stripe did not say. */
  readonly planPrices: Readonly<Record<PaidPlan, string | null>>;
  /** The account may call the paid endpoint: only then are Token packs offered (they are spent only by calls). */
  readonly mayBuyPacks: boolean;
  /** The account has a Stripe Customer: the Billing Portal can open. */
  readonly hasCustomer: boolean;
  readonly csrfToken: string;
}

/** A price in its currency's minor unit as "USD 25.00" (zero-decimal currencies have no cents). */
export function formatMoney(minor: number, currency: string): string {
  const zeroDecimal = [
    "bif",
    "clp",
    "djf",
    "gnf",
    "jpy",
    "kmf",
    "krw",
    "mga",
    "pyg",
    "rwf",
    "ugx",
    "vnd",
    "vuv",
    "xaf",
    "xof",
    "xpf",
  ].includes(currency);
  return `${currency.toUpperCase()} ${zeroDecimal ? formatInteger(minor) : (minor / 100).toFixed(2)}`;
}

const postButton = (
  action: string,
  csrfToken: string,
  fields: Record<string, string>,
  label: string,
  extraClass = "",
) =>
  html`<form method="post" action="${action}" class="inline">
    <input type="hidden" name="${CSRF_FIELD}" value="${csrfToken}">
    ${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
    <button type="submit"${extraClass ? html` class="${extraClass}"` : ""}>${label}</button>
  </form>`;

/** The payments card of the account page. */
export function renderBillingCard(view: BillingView): SafeHtml {
  const packs = view.packs.map((p) => {
    const tokens = formatInteger(p.tokens);
    const money = formatMoney(p.unitAmount, p.currency);
    return html`<li class="pack" data-pack="${p.id}"><span><strong>${tokens} Tokens</strong> for ${money}</span>
      ${postButton("/account/buy", view.csrfToken, { pack: p.id }, `Buy ${tokens} Tokens · ${money}`)}</li>`;
  });
  const plans = view.plans.map((plan) => {
    const price = view.planPrices[plan];
    const subscribe = postButton(
      "/account/subscribe",
      view.csrfToken,
      { plan },
      `Subscribe: ${planName(plan)}${price ? ` · ${price}` : ""}`,
    );
    return html`<li data-plan="${plan}"><span><strong>${planName(plan)}</strong>: the API, alerts, the watchlist, \
${price ?? "price shown at checkout"}</span>${subscribe}</li>`;
  });
  const manageBilling = postButton("/account/billing-portal", view.csrfToken, {}, "Manage billing", "secondary");
  return html`<section class="card wide" aria-labelledby="billing-h">
  <h2 id="billing-h">${view.mayBuyPacks ? "Buy Tokens" : "Choose a plan"}</h2>
  ${
    view.mayBuyPacks && view.packs.length > 0
      ? html`<p>Token packs never expire and are spent after the monthly grant. Payment is by Stripe; the Tokens \
appear here once Stripe confirms it.</p>
  <ul class="packs" id="packs">${packs}</ul>`
      : ""
  }
  ${
    view.plans.length > 0
      ? html`<p>Subscribe to call the signals API: each paid month starts with its full grant of \
Tokens.</p><ul class="plans" id="plans">${plans}</ul>`
      : ""
  }
  ${
    view.hasCustomer
      ? html`<div class="actions">${manageBilling}<span class="muted">Card, invoices and cancellation, on Stripe.</span>
        </div>`
      : ""
  }
</section>`;
}
