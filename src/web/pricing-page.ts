/**
 * The public pricing page: the plans with the price Stripe charges, the Token packs of the
 * catalogue, what each includes, how a call is billed (with the specification's own example),
 * the daily cap and what happens at 0 Tokens. Every figure comes from the offer
 * (configuration and Stripe). Pure rendering.
 */
import type { PageContext } from "./auth-pages.ts";
import { formatInteger, planName } from "./format.ts";
import { html, layout, type SafeHtml } from "./html.ts";
import { callsPerMonth, type Offer, packText, planPriceText } from "./offer.ts";

/** The specification's example: 8 coins in one call every 5 minutes. */
const EXAMPLE_MINUTES = 5;
const FOUR_HOURS_MIN = 240;

function planCard(offer: Offer, p: Offer["plans"][number], signedIn: boolean): SafeHtml {
  const price = planPriceText(p.price);
  const action = signedIn
    ? html`<a class="button" href="/account#billing-h">Subscribe on your account page</a>`
    : html`<a class="button" href="/signup">Sign up for ${planName(p.plan)}</a>`;
  return html`<li class="card plan" data-plan="${p.plan}">
  <h3>${planName(p.plan)}</h3>
  <p class="price"
  data-field="price">${price ?? (p.offered ? "Price shown at checkout" : "By arrangement with the operator")}</p>
  <ul class="includes">
    <li>${formatInteger(offer.limits.monthlyGrant)} Tokens at the start of every month (1 Token = 1 successful \
call)</li>
    <li>The signals API: up to ${offer.limits.maxSymbols} coins per call, timeframes 15m, 30m, 1h, 4h and 1d</li>
    <li>Telegram alerts on your coins and timeframes</li>
    <li>The live watchlist and the charts with the current signal</li>
    <li>Market context endpoints (movers, derivatives, news, macro) without Tokens</li>
  </ul>
  ${p.offered ? action : ""}
</li>`;
}

/** The pricing page. */
export function renderPricingPage(ctx: PageContext, offer: Offer): string {
  const { monthlyGrant, dailyCap, maxSymbols } = offer.limits;
  const calls = callsPerMonth(EXAMPLE_MINUTES);
  const share = Math.round((100 * calls) / monthlyGrant);
  return layout(
    { title: "Pricing", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "pricing" },
    html`<h1>Pricing</h1>
<p class="lead">A subscription gives the API, alerts and the live watchlist with a monthly grant of Tokens; Token \
packs top it up and never expire.</p>
${
  offer.paymentsOn
    ? ""
    : html`<p class="notice warn" id="payments-off">This server does not take payments. Plans are granted by its \
operator; ask them for an account.</p>`
}
<section aria-labelledby="plans-h">
  <h2 id="plans-h">Plans</h2>
  <ul class="plan-cards" id="plans">${offer.plans.map((p) => planCard(offer, p, ctx.signedIn !== null))}</ul>
  <p class="muted">Both plans give the same access; the founding seat is the early members' price. A subscription \
renews monthly until you cancel it under Manage billing on your account page.</p>
</section>
${
  offer.packs.length > 0
    ? html`<section aria-labelledby="packs-h">
  <h2 id="packs-h">Token packs</h2>
  <ul class="pack-list"
  id="packs">${offer.packs.map((pack) => html`<li data-pack="${pack.id}">${packText(pack)}</li>`)}</ul>
  <p>Packs never expire and are spent only once the month's grant is used up. They need an active plan to be spent: a \
pack alone does not open the API.</p>
</section>`
    : ""
}
<section aria-labelledby="billing-h">
  <h2 id="billing-h">How billing works</h2>
  <ul>
    <li><strong>1 Token per successful call</strong>, whatever the number of coins in it (up to ${maxSymbols}). A \
refused call (bad key, no plan, no Tokens, over the cap) costs nothing.</li>
    <li><strong>The grant</strong>: on the 1st of each month at 00:00 Malaysia time (MYT, UTC+8) your grant is set to \
${formatInteger(monthlyGrant)} Tokens. Unused grant does not carry over.</li>
    <li><strong>Example</strong>: ${maxSymbols} coins in one call every ${EXAMPLE_MINUTES} minutes is \
${formatInteger(calls)} calls in a 30-day month, about <strong id="example-share">${share}%</strong> of the \
${formatInteger(monthlyGrant)}-Token grant.</li>
    <li><strong>Poll once per candle close.</strong> A signal is confirmed at a candle's close, so asking the 4h \
timeframe every ${EXAMPLE_MINUTES} minutes returns the same confirmed answer ${FOUR_HOURS_MIN / EXAMPLE_MINUTES - 1} \
times out of ${FOUR_HOURS_MIN / EXAMPLE_MINUTES}: faster polling only burns Tokens. Once per 4h close is 6 calls a \
day.</li>
    <li><strong>Daily cap</strong>: at most ${formatInteger(dailyCap)} charged calls a day; the count resets at \
midnight Malaysia time (00:00 MYT). Past it, calls are answered 429 <code>rate_limited</code> and not charged.</li>
    <li><strong>At 0 Tokens</strong> calls are answered 402 <code>insufficient_credits</code> and not charged; nothing \
else stops. They work again at the next monthly grant or as soon as a Token pack is paid for. Below \
${offer.limits.lowBalancePct}% of the grant you get one notice.</li>
  </ul>
  <p>Every answer carries <code>credits_left</code>, and your account page shows the balance, each day's calls and the \
full ledger.</p>
</section>
<div class="actions">
  ${
    ctx.signedIn
      ? html`<a class="button" href="/account">Your \
account</a>`
      : html`<a class="button"
    href="/signup">Create an account</a>`
  }
  <a href="/getting-started">Getting started</a>
</div>`,
  );
}
