/**
 * The member's account page (plan, Tokens, usage, ledger, API key card, alert settings), the
 * key regeneration confirmation, and the one-time display of a new key. Pure rendering: the
 * router gathers the data. The full key appears only in renderNewKeyPage.
 */
import type { AccountSummary } from "../accounts/accounts.ts";
import { API_KEY_PREFIX } from "../accounts/api-key.ts";
import { isPaidPlan, mayCallPaidEndpoint, viewerOf } from "../accounts/entitlement.ts";
import type { StoredAlertSettings } from "../alerts/settings.ts";
import type { DailyUsage, LedgerLine, LedgerPage } from "../billing/ledger-history.ts";
import { nextMytMidnight, nextMytMonthStart } from "../clock.ts";
import type { LedgerKind } from "../db/schema.ts";
import { type PageContext, renderPasswordAndSessionsCard } from "./auth-pages.ts";
import { type BillingView, renderBillingCard } from "./billing-card.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { formatDelta, formatIn, formatInteger, formatMyt, planName, shortDay } from "./format.ts";
import { curlLine } from "./getting-started-page.ts";
import { html, layout, type SafeHtml } from "./html.ts";
import { type AlertsCardView, renderAlertsCard, type TelegramView } from "./telegram-card.ts";
import { renderUsageCard } from "./usage-chart.ts";

/** Characters of a key after its display prefix (shown as dots). */
const HIDDEN_KEY_CHARS = 28;

export interface AccountView {
  readonly summary: AccountSummary;
  readonly now: number;
  readonly dailyCap: number;
  readonly monthlyGrant: number;
  /** One page of the ledger (charges one line per day), and the `before` it was read from. */
  readonly ledger: LedgerPage;
  readonly ledgerBefore: number | null;
  /** Calls and Tokens per MYT day, the last 30 days. */
  readonly usage: readonly DailyUsage[];
  /** The valid key's creation and last use, and how often last use is written (ms). */
  readonly keyTimes: { createdAt: Date; lastUsedAt: Date | null } | null;
  readonly lastUsedWindowMs: number;
  readonly alerts: StoredAlertSettings | null;
  /** What the alert form shows after a refused change (the member's input and why). */
  readonly alertsForm?: AlertsCardView["alertsForm"];
  /** Connect / test / disconnect Telegram (absent: only the manual chat id). */
  readonly telegram?: TelegramView;
  readonly flash?: string | null;
  /** Packs, plans and the Billing Portal; null when payments are off. */
  readonly billing?: BillingView | null;
}

const LEDGER_LABELS: Record<LedgerKind, string> = {
  grant: "Monthly grant",
  expiry: "Unused grant expired",
  pack: "Token pack",
  charge: "API call",
  adjustment: "Adjustment",
};

/** The key as it may be shown again: its display prefix, the rest as dots. */
export function maskedKey(prefix: string): string {
  return prefix + "\u2022".repeat(HIDDEN_KEY_CHARS);
}

function subscriptionLine(summary: AccountSummary, now: number): SafeHtml {
  const until = summary.subscriptionUntil?.getTime() ?? null;
  if (until === null) return html`<span>No subscription</span>`;
  if (until > now) return html`<span>Active until ${formatMyt(until)}</span>`;
  return html`<strong class="neg">Ended on ${formatMyt(until)}</strong> <span class="muted">(renew to use your key \
again)</span>`;
}

/** The account may call the paid endpoint now (the entitlement rule); everything API-related is offered only then. */
const mayCall = (view: AccountView) => mayCallPaidEndpoint(viewerOf(view.summary, view.now));
/** Subscribing, buying and the key are offered only once the email is confirmed (those forms answer 403 until then). */
const mayPay = (view: AccountView) => view.summary.emailVerified;

/** What an account without a key does next, after "This account has no API key yet." */
function noKeyNext(view: AccountView): string {
  if (!mayPay(view)) return " Confirm your email address first.";
  return mayCall(view) ? " Create it below." : " Subscribe first: a key is made once your plan is paid.";
}

/**
 * What a plan that cannot call the API is told: what it can use, and the way up (the payments
 * card's Subscribe buttons, or how the operator grants a plan when this server takes no payments).
 */
function cannotCallNotice(view: AccountView, paid: boolean): SafeHtml {
  const why = paid
    ? "Your subscription is not active, so the signals API, alerts and the watchlist are paused."
    : "This plan cannot call the signals API: it is open to the node and founding-seat plans.";
  const way = !mayPay(view)
    ? html`Confirm your email address first (the notice above); then you can subscribe here \
(<a href="/pricing">pricing</a>).`
    : view.billing
      ? html`<a href="#billing-h">Subscribe below</a> (<a href="/pricing">pricing</a>) to get the API, alerts, the \
live watchlist and ${formatInteger(view.monthlyGrant)} Tokens a month.`
      : html`This server does not take payments: its operator grants plans. Ask them; they run <code>signals account \
create --email ${view.summary.email} --plan node --until 2027-01-01T00:00:00+08:00</code> for a new account, or \
<code>signals subscription set --account ${view.summary.accountId} --until …</code> to renew a node account.`;
  return html`<div class="notice warn" id="upgrade">
    <p>${why}</p>
    <p>Meanwhile you can use the <a href="/charts">charts</a> (price history and the signals that ended) and the \
public <a href="/track-record">track record</a>.</p>
    <p>${way}</p>
  </div>`;
}

function planCard(view: AccountView): SafeHtml {
  const { summary, now } = view;
  const paid = isPaidPlan(summary.plan);
  return html`<section class="card" aria-labelledby="plan-h">
  <h2 id="plan-h">Plan</h2>
  <p class="big">${planName(summary.plan)}</p>
  <dl class="facts">
    <dt>Subscription</dt><dd id="subscription">${subscriptionLine(summary, now)}</dd>
    <dt>Account</dt><dd>${summary.email}</dd>
  </dl>
  ${
    mayCall(view)
      ? html`<p class="actions"><a href="/watch">Open your watchlist</a> \
<a href="/getting-started">Getting started</a></p>`
      : cannotCallNotice(view, paid)
  }
</section>`;
}

function tokensCard(view: AccountView): SafeHtml {
  const { summary, now } = view;
  const paid = isPaidPlan(summary.plan);
  const nextGrant = nextMytMonthStart(now);
  return html`<section class="card" aria-labelledby="tokens-h">
  <h2 id="tokens-h">Token balance</h2>
  <p class="big" id="tokens-left">${formatInteger(summary.tokensLeft)}</p>
  <p class="muted">Tokens left; each successful API call uses 1.</p>
  <dl class="facts">
    <dt>Monthly grant</dt><dd id="grant-balance">${formatInteger(summary.grantBalance)}${
      summary.grantMonth
        ? html` \
<span class="muted">(${summary.grantMonth})</span>`
        : ""
    }</dd>
    <dt>Token packs</dt><dd id="pack-balance">${formatInteger(summary.packBalance)} <span class="muted">(never \
expire)</span></dd>
    ${
      paid
        ? html`<dt>Next grant</dt><dd id="next-grant">${formatMyt(nextGrant)} \
<span class="muted">(${formatIn(nextGrant - now)})</span></dd>`
        : ""
    }
  </dl>
  ${
    paid
      ? html`<p class="muted">Each grant resets the grant bucket to ${formatInteger(view.monthlyGrant)}; unused \
grant does not carry over. Packs are spent after the grant.</p>`
      : ""
  }
</section>`;
}

function usageCard(view: AccountView): SafeHtml {
  const { summary, now, dailyCap } = view;
  const reset = nextMytMidnight(now);
  return html`<section class="card" aria-labelledby="usage-h">
  <h2 id="usage-h">Calls today</h2>
  <p class="big"><span id="calls-today">${formatInteger(summary.callsToday)}</span> <span class="muted">of \
${formatInteger(dailyCap)}</span></p>
  <label for="usage-meter" class="hint">Share of today's call limit used</label>
  <meter id="usage-meter" min="0" max="${dailyCap}"
  value="${Math.min(summary.callsToday, dailyCap)}">${summary.callsToday} of ${dailyCap}</meter>
  <dl class="facts">
    <dt>Resets</dt><dd id="usage-reset">tomorrow 00:00 MYT <span class="muted">(${formatMyt(reset)}, \
${formatIn(reset - now)})</span></dd>
  </dl>
</section>`;
}

/** "1 min" / "5 s": how stale a last-used time may be. */
function windowText(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.max(1, Math.round(ms / 1000))} s`;
}

function keyFacts(view: AccountView): SafeHtml {
  const times = view.keyTimes;
  if (times === null) return html``;
  return html`<dl class="facts">
    <dt>Created</dt><dd id="key-created">${formatMyt(times.createdAt.getTime())}</dd>
    <dt>Last used</dt>
    <dd id="key-last-used">${times.lastUsedAt ? formatMyt(times.lastUsedAt.getTime()) : "Not used yet"} \
<span class="muted">(recorded every ${windowText(view.lastUsedWindowMs)})</span></dd>
  </dl>`;
}

function keyCard(view: AccountView): SafeHtml {
  const prefix = view.summary.keyPrefix;
  return html`<section class="card wide" aria-labelledby="key-h">
  <h2 id="key-h">API key</h2>
  <p class="muted">New to the API? <a href="/getting-started">Getting started</a>: the first call, reading the answer, \
polling once per close.</p>
  ${
    prefix
      ? html`<p>Your key, masked: only its first characters are ever shown again.</p>
  <code class="key" id="masked-key"
  aria-label="API key starting with ${prefix}, the rest hidden">${maskedKey(prefix)}</code>
  ${keyFacts(view)}`
      : html`<p id="no-key">This account has no API key yet.${noKeyNext(view)}</p>`
  }
  <div class="actions">
    ${
      !mayPay(view)
        ? ""
        : prefix
          ? html`<a class="button secondary" href="/account/key">Regenerate key…</a>
    <span class="muted">Lost the key? Regenerate it: the old key stops working at once.</span>`
          : mayCall(view)
            ? html`<a class="button" href="/account/key">Create key…</a>`
            : ""
    }
  </div>
</section>`;
}

/** Subscribe, buy and manage billing: only when payments are on and the email is confirmed. */
const billingCard = (view: AccountView): SafeHtml | "" =>
  view.billing && mayPay(view) ? renderBillingCard(view.billing) : "";

function ledgerRow(line: LedgerLine): SafeHtml {
  const when = line.type === "charges" ? `${shortDay(line.day)} ${line.day.slice(0, 4)}` : formatMyt(line.at.getTime());
  const entry =
    line.type === "charges"
      ? `${formatInteger(line.calls)} API call${line.calls === 1 ? "" : "s"}`
      : (LEDGER_LABELS[line.kind] ?? line.kind);
  const note =
    line.type === "charges"
      ? `${formatInteger(line.calls)} calls, ${formatDelta(line.tokens)} Tokens`
      : (line.reason ?? "");
  return html`<tr class="${line.type}">
      <td data-label="When">${when}</td>
      <td data-label="Entry" class="text">${entry}</td>
      <td data-label="Tokens" class="${line.tokens < 0 ? "neg" : "pos"}">${formatDelta(line.tokens)}</td>
      <td data-label="Grant after">${formatInteger(line.grantAfter)}</td>
      <td data-label="Packs after">${formatInteger(line.packAfter)}</td>
      <td data-label="Note" class="reason">${note}</td>
    </tr>`;
}

function ledgerCard(view: AccountView): SafeHtml {
  const { lines, older } = view.ledger;
  const pages = html`<nav class="actions" aria-label="Ledger pages">
    ${view.ledgerBefore !== null ? html`<a href="/account#ledger-h">Newest entries</a>` : ""}
    ${older !== null ? html`<a href="/account?ledger_before=${older}#ledger-h" rel="next">Older entries</a>` : ""}
    <a href="/account/ledger.csv" download>Download the full ledger (CSV, one row per call)</a>
  </nav>`;
  return html`<section class="card wide" aria-labelledby="ledger-h">
  <h2 id="ledger-h">Ledger</h2>
  ${
    lines.length === 0
      ? html`<p>No entries${view.ledgerBefore !== null ? " older than these" : " yet"}.</p>`
      : html`<p class="muted" id="ledger-note">Newest first. Grants, packs and adjustments are one line each; a day's \
API calls are one line. Times in MYT.</p>
  <div class="table-wrap"><table id="ledger" class="stack" aria-labelledby="ledger-h" aria-describedby="ledger-note">
    <thead><tr><th scope="col">When</th><th scope="col" class="text">Entry</th><th scope="col">Tokens</th>
    <th scope="col">Grant after</th><th scope="col">Packs after</th><th scope="col" class="text">Note</th></tr></thead>
    <tbody>${lines.map(ledgerRow)}</tbody>
  </table></div>`
  }
  ${pages}
</section>`;
}

/**
 * The account page. A member who can call the API sees the plan, balance and today's calls in
 * one row, then the key; anyone else sees the plan with what it allows and the way up first.
 */
export function renderAccountPage(
  ctx: PageContext & { signedIn: { email: string; csrfToken: string } },
  view: AccountView,
  scripts: readonly string[] = [],
): string {
  return layout(
    { title: "Your account", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "account", scripts },
    html`<h1>Your account</h1>
${view.flash ? html`<div class="notice ok" role="status">${view.flash}</div>` : ""}
${view.summary.emailVerified ? "" : unverifiedNotice(ctx.signedIn.csrfToken)}
<div class="cards">
  ${planCard(view)}
  ${
    mayCall(view)
      ? html`${tokensCard(view)}${usageCard(view)}${keyCard(view)}${renderUsageCard(view.usage)}${billingCard(view)}`
      : html`${billingCard(view)}${keyCard(view)}${tokensCard(view)}${usageCard(view)}${renderUsageCard(view.usage)}`
  }
  ${renderAlertsCard(view, ctx.signedIn.csrfToken)}
  ${renderPasswordAndSessionsCard(ctx.signedIn.csrfToken)}
  ${ledgerCard(view)}
</div>`,
  );
}

/** An unconfirmed sign-up: what it cannot do yet, and a new link. */
function unverifiedNotice(csrfToken: string) {
  return html`<div class="notice warn" role="alert">
  <p><strong>Confirm your email address.</strong> Until you open the link we mailed when you signed up, this account \
cannot subscribe, buy Tokens or make an API key.</p>
  <form method="post" action="/account/verify-email" class="actions">
    <input type="hidden" name="${CSRF_FIELD}" value="${csrfToken}">
    <button type="submit" class="secondary">Mail the link again</button>
  </form>
</div>`;
}

/** The confirmation step before a regeneration (or before the first key, which replaces nothing). */
export function renderKeyConfirmPage(
  ctx: PageContext & { signedIn: { email: string; csrfToken: string } },
  keyPrefix: string,
  confirmToken: string,
): string {
  const first = keyPrefix === "";
  return layout(
    {
      title: first ? "Create your API key" : "Regenerate your API key",
      stylesheet: ctx.stylesheet,
      signedIn: ctx.signedIn,
      current: "account",
    },
    html`<h1>${first ? "Create your API key" : "Regenerate your API key?"}</h1>
${
  first
    ? html`<div class="notice ok" role="status"><p>The key is shown once, on the next page, with the exact command of \
a first call. Copy it then: it cannot be shown again.</p></div>`
    : html`<div class="notice warn" role="alert">
  <p><strong>Your current key (<code>${maskedKey(keyPrefix)}</code>) stops working at once</strong>, for every program \
that uses it, on every server.</p>
  <p>The new key is shown once, on the next page. Copy it then: it cannot be shown again.</p>
</div>`
}
<form method="post" action="/account/key" class="actions">
  <input type="hidden" name="${CSRF_FIELD}" value="${ctx.signedIn.csrfToken}">
  <input type="hidden" name="confirm" value="${confirmToken}">
  <button type="submit"${
    first
      ? ""
      : html` \
class="danger"`
  }>${first ? "Create the key now" : "Regenerate the key now"}</button>
  <a href="/account">${first ? "Cancel" : "Cancel, keep the current key"}</a>
</form>`,
  );
}

/** The only page that ever shows a full key: right after it was made. */
export function renderNewKeyPage(
  ctx: PageContext & { signedIn: { email: string; csrfToken: string } },
  apiKey: string,
  scripts: readonly string[],
  baseUrl: string,
): string {
  return layout(
    { title: "Your new API key", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "account", scripts },
    html`<h1>Your new API key</h1>
<div class="notice ok" role="status">Any key you had before has stopped working. Use this one from now on.</div>
<p><strong>This is the only time the full key is shown.</strong> Copy it now and keep it somewhere safe; this page \
cannot be shown again.</p>
<code class="key key-full" id="new-key">${apiKey}</code>
<div class="actions">
  <button type="button" data-copy-target="new-key" data-copy-status="copy-status" hidden>Copy key</button>
  <a href="/account">Back to your account</a>
</div>
<p id="copy-status" role="status" aria-live="polite"></p>
<p class="muted">Send it as the <code>x-api-key</code> header. Keys start with <code>${API_KEY_PREFIX}</code>.</p>
<h2>Your first call</h2>
<p>Paste this into a terminal: it uses 1 Token and returns the current signals of BTC and ETH on the 4h timeframe.</p>
<pre class="code wrap" tabindex="0"><code id="first-call">${curlLine(baseUrl, apiKey)}</code></pre>
<p><a href="/getting-started">Getting started</a>: the same call in TypeScript and Python, and how to read the \
answer.</p>`,
  );
}

/** What a reload or Back of the one-time page shows: the key is not shown again, nor regenerated. */
export function renderKeyGonePage(ctx: PageContext & { signedIn: { email: string; csrfToken: string } }): string {
  return layout(
    { title: "Key already shown", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "account" },
    html`<h1>This key was already shown</h1>
<div class="notice warn" role="status" id="key-gone">A new key is shown only once. Your key was not changed: the key \
shown before still works.</div>
<p>If you did not copy it, regenerate to get a new one (the key shown before then stops working).</p>
<div class="actions">
  <a class="button secondary" href="/account/key">Regenerate key…</a>
  <a href="/account">Back to your account</a>
</div>`,
  );
}
