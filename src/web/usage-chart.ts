/**
 * The account page's "last 30 days" card: calls per MYT day as a bar chart drawn on the server
 * as inline SVG (no script, no library, nothing fetched), with the same numbers as a table for
 * screen readers and for copying. Each bar carries its day and count, so what is drawn can be
 * checked against the ledger. Why SVG rather than the chart library: docs/decisions.md.
 */
import type { DailyUsage } from "../billing/ledger-history.ts";
import { formatInteger, shortDay } from "./format.ts";
import { html, type SafeHtml } from "./html.ts";

/** The drawing's own units; the SVG scales to the card's width. */
const WIDTH = 300;
const HEIGHT = 100;
const GAP = 2;

/** The bar chart and its table (days oldest first, the last one today). */
export function renderUsageCard(days: readonly DailyUsage[]): SafeHtml {
  const busiest = Math.max(0, ...days.map((d) => d.calls));
  const most = Math.max(1, busiest);
  const totalCalls = days.reduce((sum, d) => sum + d.calls, 0);
  const totalTokens = days.reduce((sum, d) => sum + d.tokens, 0);
  const slot = WIDTH / days.length;
  const bars = days.map((d, i) => {
    // A day with calls is at least one unit tall, so a single call stays visible beside a busy day.
    const height = d.calls === 0 ? 0 : Math.max(1, Math.round((d.calls / most) * HEIGHT * 100) / 100);
    return html`<rect class="usage-bar" x="${(i * slot + GAP / 2).toFixed(2)}" y="${(HEIGHT - height).toFixed(2)}"
      width="${(slot - GAP).toFixed(2)}" height="${height.toFixed(2)}" data-day="${d.day}"
      data-calls="${d.calls}"><title>${shortDay(d.day)}: ${formatInteger(d.calls)} calls, ${formatInteger(d.tokens)} \
Tokens</title></rect>`;
  });
  const first = days[0]!;
  return html`<section class="card wide" aria-labelledby="history-h">
  <h2 id="history-h">Usage, last ${days.length} days</h2>
  <p><span id="calls-30d">${formatInteger(totalCalls)}</span> calls, \
<span id="tokens-30d">${formatInteger(totalTokens)}</span> Tokens spent <span class="muted">(MYT days, \
${shortDay(first.day)} to today)</span></p>
  <figure class="usage-chart">
    <svg id="usage-chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" preserveAspectRatio="none" role="img"
    aria-labelledby="usage-chart-title">
      <title id="usage-chart-title">Calls per day over the last ${days.length} days; the busiest day had \
${formatInteger(busiest)}. The table below lists each day.</title>
      <line class="usage-axis" x1="0" y1="${HEIGHT}" x2="${WIDTH}" y2="${HEIGHT}"></line>
      ${bars}
    </svg>
    <figcaption class="usage-scale"><span>${shortDay(first.day)}</span><span>top: ${formatInteger(busiest)} \
calls</span><span>today</span></figcaption>
  </figure>
  <details>
    <summary>Calls and Tokens per day</summary>
    <table id="usage-days" class="stack">
      <thead><tr><th scope="col" class="text">Day (MYT)</th><th scope="col">Calls</th><th scope="col">Tokens spent</th>
      </tr></thead>
      <tbody>${[...days].reverse().map(
        (d) => html`<tr data-day="${d.day}"><td data-label="Day"
        class="text">${shortDay(d.day)}</td><td data-label="Calls">${formatInteger(d.calls)}</td>
        <td data-label="Tokens spent">${formatInteger(d.tokens)}</td></tr>`,
      )}</tbody>
    </table>
  </details>
</section>`;
}
