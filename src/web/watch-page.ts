/**
 * The live watchlist page (/watch): the member's coins × timeframes as one table, readable
 * without script (the values at the moment the page was made), kept current by watch.js from
 * the server-sent events of /watch/stream, which carry the same rows rendered here. The form
 * below chooses the coins and timeframes. Pure rendering.
 */

import { MAX_WATCH_SYMBOLS, type WatchCell, type Watchlist } from "../accounts/watchlist.ts";
import type { SignalName } from "../market/snapshot.ts";
import { TIMEFRAMES } from "../market/timeframes.ts";
import type { PageContext } from "./auth-pages.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { formatMyt, formatPrice } from "./format.ts";
import { html, layout, type SafeHtml } from "./html.ts";

type SignedInContext = PageContext & { signedIn: { email: string; csrfToken: string } };

const SIGNAL_TEXT: Record<SignalName, string> = {
  STRONG_LONG: "Strong long",
  LONG: "Long",
  SHORT: "Short",
  STRONG_SHORT: "Strong short",
  NONE: "None",
};
const SIGNAL_CLASS: Record<SignalName, string> = {
  STRONG_LONG: "sig-long",
  LONG: "sig-long",
  SHORT: "sig-short",
  STRONG_SHORT: "sig-short",
  NONE: "sig-none",
};
const REASON_TEXT = {
  unknown_symbol: "unknown coin",
  no_data: "no data yet",
  stale: "feed stale",
  invalid_symbol: "not a coin code",
} as const;

/** The table's rows for these cells (also what each server-sent event carries). */
export function renderWatchRows(cells: readonly WatchCell[]): SafeHtml {
  return html`${cells.map((cell) => {
    const key = `${cell.symbol}/${cell.tf}`;
    if (!cell.ok) {
      return html`<tr data-cell="${key}" data-ok="false"><th scope="row">${cell.symbol} \
<span class="muted">${cell.tf}</span></th>
  <td data-label="Signal" class="text" colspan="7" data-field="reason"
  data-value="${cell.reason}">${REASON_TEXT[cell.reason]}</td></tr>`;
    }
    const a = cell.arming;
    const arming = a === null ? "–" : `${a.dir === 1 ? "long" : "short"} ${a.score}/10 at ${formatPrice(a.trigger)}`;
    const defense = cell.defense === null ? "–" : formatPrice(cell.defense);
    const changedAt = cell.changed_at === null ? "–" : formatMyt(cell.changed_at);
    return html`<tr data-cell="${key}" data-ok="true">
  <th scope="row">${cell.symbol} <span class="muted">${cell.tf}</span></th>
  <td data-label="Signal" class="text" data-field="signal"
  data-value="${cell.signal}"><span class="${SIGNAL_CLASS[cell.signal]}">${SIGNAL_TEXT[cell.signal]}</span></td>
  <td data-label="Confirmed" class="text" data-field="confirmed"
  data-value="${String(cell.confirmed)}">${cell.confirmed ? "confirmed" : "forming"}</td>
  <td data-label="Defense" data-field="defense" data-value="${String(cell.defense)}">${defense}</td>
  <td data-label="Arming" class="text" data-field="arming" data-value="${JSON.stringify(a)}">${arming}</td>
  <td data-label="ATR" data-field="atr_pct" data-value="${String(cell.atr_pct)}">${cell.atr_pct.toFixed(2)}%</td>
  <td data-label="Price" data-field="price" data-value="${String(cell.price)}">${formatPrice(cell.price)}</td>
  <td data-label="Last change" data-field="changed_at" data-value="${String(cell.changed_at)}">${changedAt}</td>
</tr>`;
  })}`;
}

function listForm(
  ctx: SignedInContext,
  list: Watchlist,
  error: string | null,
  input: { symbols: string; timeframes: readonly string[] } | null,
): SafeHtml {
  const symbols = input?.symbols ?? list.symbols.join(", ");
  const tfs = input?.timeframes ?? list.timeframes;
  return html`<section class="card" aria-labelledby="choose-h">
  <h2 id="choose-h">Your coins and timeframes</h2>
  ${error ? html`<p class="notice error" role="alert" id="watch-error">${error}</p>` : ""}
  <form method="post" action="/watch" class="stack">
    <input type="hidden" name="${CSRF_FIELD}" value="${ctx.signedIn.csrfToken}">
    <label for="watch-symbols">Coins <span class="hint">Up to ${MAX_WATCH_SYMBOLS}, separated by commas, such as BTC, \
ETH</span></label>
    <input type="text" id="watch-symbols" name="symbols" value="${symbols}" autocomplete="off" spellcheck="false"
    required>
    <fieldset><legend>Timeframes</legend><div class="checks">
      ${TIMEFRAMES.map(
        (tf) => html`<label><input type="checkbox" name="timeframes"
        value="${tf}"${tfs.includes(tf) ? html` checked` : ""}> ${tf}</label>`,
      )}
    </div></fieldset>
    <div class="actions"><button type="submit">Save the watchlist</button></div>
  </form>
</section>`;
}

/** The watchlist page of a member who may see current signals. */
export function renderWatchPage(
  ctx: SignedInContext,
  view: {
    list: Watchlist;
    cells: readonly WatchCell[];
    now: number;
    flash?: string | null;
    error?: string | null;
    input?: { symbols: string; timeframes: readonly string[] } | null;
  },
  scripts: readonly string[],
): string {
  return layout(
    { title: "Watchlist", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "watch", scripts },
    html`<h1>Watchlist</h1>
${view.flash ? html`<div class="notice ok" role="status">${view.flash}</div>` : ""}
<p class="muted" id="watch-note">The current signals of your coins, the same values the API returns, updated here as \
candles close. Watching uses no Tokens. Times in MYT.</p>
<div class="table-wrap"><table id="watch" class="stack" aria-describedby="watch-note" data-as-of="${view.now}">
  <thead><tr><th scope="col">Coin</th><th scope="col" class="text">Signal</th><th scope="col"
  class="text">Confirmed</th><th scope="col">Defense</th><th scope="col" class="text">Arming</th>
  <th scope="col">ATR</th><th scope="col">Price</th><th scope="col">Last change</th></tr></thead>
  <tbody id="watch-rows">${renderWatchRows(view.cells)}</tbody>
</table></div>
<p class="muted" id="watch-live" role="status" aria-live="polite">As of ${formatMyt(view.now)}; reload for newer \
values if live updates are off.</p>
${listForm(ctx, view.list, view.error ?? null, view.input ?? null)}`,
  );
}

/** What a member without current access sees instead: what the plan allows, and the way to it. */
export function renderWatchUpgradePage(ctx: SignedInContext): string {
  return layout(
    { title: "Watchlist", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "watch" },
    html`<h1>Watchlist</h1>
<p class="notice warn" id="watch-upgrade">The live watchlist shows current signals, which are for the node and \
founding-seat plans with an active subscription. Your plan shows the price history and the signals that ended on the \
<a href="/charts">chart pages</a>, and the public <a href="/track-record">track record</a>.</p>
<div class="actions"><a class="button" href="/account#billing-h">Choose a plan</a> <a href="/pricing">Pricing</a>
</div>`,
  );
}
