/**
 * The public landing page at `/`: what the service does in one screen, an example answer of
 * the API built from a signal that ended (never a current one), the public track record's
 * headline with its method linked, the plans and the way in. Server-rendered, no script, no
 * request to another site. Pure rendering: routes/public-pages.ts gathers the data.
 */

import { ENDED_SIGNAL_DELAY_MS } from "../accounts/entitlement.ts";
import { DEMO_DATA_LABEL } from "../market/provenance.ts";
import { DEFAULT_LIVE_COSTS } from "../track-record/live-record.ts";
import type { ExampleAnswer, Headline } from "../track-record/public-showcase.ts";
import type { PageContext } from "./auth-pages.ts";
import { formatFee } from "./chart-page.ts";
import { formatInteger, formatMyt, formatMytDate, planName } from "./format.ts";
import { html, layout, type SafeHtml } from "./html.ts";
import { type Offer, planPriceText } from "./offer.ts";

export interface LandingView {
  readonly example: ExampleAnswer | null;
  readonly headline: Headline;
  readonly offer: Offer;
}

const DELAY_HOURS = ENDED_SIGNAL_DELAY_MS / 3_600_000;

/** The answer as a reader scans it: one line per top-level field, one per signal entry. */
function compactJson(body: Record<string, unknown>): string {
  const lines = Object.entries(body).map(([key, value]) =>
    Array.isArray(value)
      ? `  "${key}": [\n${value.map((v) => `    ${JSON.stringify(v)}`).join(",\n")}\n  ]`
      : `  "${key}": ${JSON.stringify(value)}`,
  );
  return `{\n${lines.join(",\n")}\n}`;
}

function exampleSection(example: ExampleAnswer | null): SafeHtml {
  if (example === null) {
    return html`<p class="muted">An example answer appears here once the first signal has ended at least \
${DELAY_HOURS} hours ago.</p>`;
  }
  return html`<figure class="example">
  ${
    example.demo
      ? html`<p class="demo-label" id="example-demo"><strong>${DEMO_DATA_LABEL}.</strong> This server has \
no real market data yet; the example comes from the demo feed.</p>`
      : ""
  }
  <figcaption>An answer as the API gave it at ${formatMyt(example.asOf)} for \
<code>symbols=${example.symbol},NEWCOIN&amp;tf=${example.tf}</code>. This signal has ended: current signals reach \
paying members only. (<code>arming</code> is null here because past forming setups are not kept.)</figcaption>
  <pre class="code" tabindex="0" id="example-answer"><code>${compactJson(example.body)}</code></pre>
</figure>`;
}

function headlineSection(h: Headline): SafeHtml {
  if (h.trades === 0)
    return html`<p>No live signal has ended yet, so there is no track record to show. \
<a href="/track-record#method">How it will be computed</a>.</p>`;
  const winRate = ((100 * h.wins) / h.trades).toFixed(1);
  const span = h.from !== null && h.to !== null ? `, ${formatMytDate(h.from)} to ${formatMytDate(h.to)}` : "";
  return html`<ul class="stats" id="headline">
    <li><span class="stat" data-field="trades">${formatInteger(h.trades)}</span> trades from live signals that \
ended</li>
    <li><span class="stat" data-field="winRate">${winRate}%</span> won after ${formatFee(DEFAULT_LIVE_COSTS.feePct)} \
fee and ${formatFee(DEFAULT_LIVE_COSTS.slippagePct)} slippage per side</li>
    <li><span class="stat" data-field="beatBuyHold">${h.beatBuyHold} of ${h.series}</span> coin × timeframe series \
beat buying and holding</li>
  </ul>
  <p class="muted">${h.coins} coin${h.coins === 1 ? "" : "s"}${span}. Every trade is counted, losers included: \
<a href="/track-record">the full table</a> and <a href="/track-record#method">how it is computed</a>.</p>`;
}

function plansSection(offer: Offer): SafeHtml {
  return html`<ul class="plan-cards">
  ${offer.plans.map(
    (p) => html`<li class="card plan" data-plan="${p.plan}">
      <h3>${planName(p.plan)}</h3>
      <p class="price">${planPriceText(p.price) ?? (p.offered ? "Price shown at checkout" : "By arrangement")}</p>
      <p>${formatInteger(offer.limits.monthlyGrant)} Tokens a month, the signals API, alerts, live watchlist.</p>
    </li>`,
  )}
  </ul>
  <p><a href="/pricing">Pricing, Token packs and how billing works</a></p>`;
}

/** The landing page. */
export function renderLandingPage(ctx: PageContext, view: LandingView): string {
  const cta = ctx.signedIn
    ? html`<a class="button" href="/account">Go to your account</a> <a class="button secondary"
      href="/watch">Open your watchlist</a>`
    : html`<a class="button" href="/signup">Create an account</a> <a class="button secondary"
      href="/pricing">See pricing</a>`;
  return layout(
    {
      title: "Market-structure signals for crypto",
      stylesheet: ctx.stylesheet,
      signedIn: ctx.signedIn,
      current: "home",
    },
    html`<section class="hero" aria-labelledby="hero-h">
  <h1 id="hero-h">Market-structure signals for crypto, as an API</h1>
  <p class="lead">One call returns the current break-of-structure signal for up to ${view.offer.limits.maxSymbols} \
coins on one timeframe (15m to 1d): the direction, whether the candle has closed on it, the level that would \
invalidate it, and a setup that is forming. Read-only: no orders, no exchange keys, no custody.</p>
  <div class="actions">${cta}</div>
</section>
<section aria-labelledby="how-h">
  <h2 id="how-h">What you get</h2>
  <ul class="feature-list">
    <li><strong>The API</strong>: <code>GET /api/v1/signals</code> with your key, JSON over HTTPS (also gRPC and \
Connect). 1 Token per successful call; refused calls are free.</li>
    <li><strong>A live watchlist</strong> of your coins and timeframes that updates by itself as candles close.</li>
    <li><strong>Alerts</strong> in Telegram at the same moment as the API sees the change.</li>
    <li><strong>Charts</strong> with every past signal and its result, and a backtest at your fee.</li>
  </ul>
</section>
<section aria-labelledby="example-h">
  <h2 id="example-h">An example answer</h2>
  ${exampleSection(view.example)}
  <p><a href="/getting-started">Getting started</a>: the first call in curl, TypeScript and Python, and how to read \
each field. The full reference is in the <a href="/docs">API docs</a>.</p>
</section>
<section aria-labelledby="record-h">
  <h2 id="record-h">Track record</h2>
  ${headlineSection(view.headline)}
</section>
<section aria-labelledby="plans-h">
  <h2 id="plans-h">Plans</h2>
  ${plansSection(view.offer)}
</section>`,
  );
}
