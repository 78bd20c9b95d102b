/**
 * The public /track-record page (no sign-in, no Token): the live record only (signals the
 * service issued live, filled at the next candle's open after a stated fee, slippage and
 * funding), its confidence per timeframe, each day's head of the tamper-evident signal log, and
 * the method with its formulas and references. Backtests over imported history stay on the
 * member chart pages. Pure rendering.
 */

import { ENDED_SIGNAL_DELAY_MS } from "../accounts/entitlement.ts";
import type { PerformanceSummary } from "../performance/statistics.ts";
import type { DailyChainHead } from "../track-record/event-log.ts";
import {
  DAYS_PER_YEAR,
  type PortfolioFigures,
  REGIME_LOOKBACK_DAYS,
  type TimeframeConfidence,
} from "../track-record/live-confidence.ts";
import type { LiveCosts } from "../track-record/live-record.ts";
import type { LiveRecordView, LiveSeriesView } from "../track-record/live-record-data.ts";
import type { PageContext } from "./auth-pages.ts";
import { signClass } from "./chart-page.ts";
import { formatInteger, formatMytDate, formatPercent } from "./format.ts";
import { html, layout, type SafeHtml } from "./html.ts";

const ENDED_SIGNAL_DELAY_HOURS = ENDED_SIGNAL_DELAY_MS / 3_600_000;
const DASH = "\u2013";

const pct = (fraction: number): string => formatPercent(Number.isFinite(fraction) ? fraction * 100 : null);
const num = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : DASH);
const prob = (value: number): string => num(value, 3);

/** The costs as the page states them. */
export function costsText(costs: LiveCosts): string {
  const funding =
    costs.shortFundingPctPer8h === 0
      ? "no funding (none assumed: see the method)"
      : `funding of ${costs.shortFundingPctPer8h}% per 8 hours on shorts`;
  return `${costs.feePct}% fee and ${costs.slippagePct}% slippage per side, ${funding}`;
}

function seriesRow(s: LiveSeriesView): SafeHtml {
  const { live } = s;
  const open = live.open;
  const openCell =
    open === null ? DASH : html`${open.direction === 1 ? "long" : "short"} ${formatPercent((open.growth - 1) * 100)}`;
  return html`<tr data-series="${s.symbol}/${s.tf}">
    <th scope="row">${s.symbol} <span class="muted">${s.tf}</span></th>
    <td data-label="Live since" class="text"${
      s.until === null
        ? ""
        : html` \
data-until="${s.until}"`
    }>${live.liveSince === null ? DASH : formatMytDate(live.liveSince)}</td>
    <td data-label="Trades" data-field="trades">${formatInteger(live.trades.length)}</td>
    <td data-label="Win rate" data-field="winRate">${s.winRatePct === null ? DASH : `${s.winRatePct.toFixed(1)}%`}</td>
    <td data-label="Average per trade" data-field="avgResult"
    class="${signClass(s.avgResultPct)}">${formatPercent(s.avgResultPct)}</td>
    <td data-label="Compounded" data-field="total" class="${signClass(s.totalPct)}">${formatPercent(s.totalPct)}</td>
    <td data-label="Buy and hold" data-field="buyHold"
    class="${signClass(s.buyHoldPct)}">${formatPercent(s.buyHoldPct)}</td>
    <td data-label="Max drawdown"
    data-field="drawdown">${s.maxDrawdownPct === null ? DASH : formatPercent(-s.maxDrawdownPct)}</td>
    <td data-label="Open position" data-field="open">${openCell}</td>
  </tr>`;
}

function winCell(f: PortfolioFigures): string {
  const w = f.winRate;
  return w.trials === 0
    ? DASH
    : `${(w.rate * 100).toFixed(1)}% (${(w.low * 100).toFixed(1)}–${(w.high * 100).toFixed(1)}%, ` +
        `${w.trials} trades)`;
}

function summaryCells(s: PerformanceSummary): SafeHtml {
  return html`<td data-label="Return" data-field="return" class="${signClass(s.totalReturn)}">${pct(s.totalReturn)}</td>
    <td data-label="Volatility" data-field="volatility">${pct(s.annualisedVolatility)}</td>
    <td data-label="Sharpe" data-field="sharpe">${num(s.sharpeAnnualised, 2)}</td>
    <td data-label="PSR" data-field="psr">${prob(s.psr)}</td>
    <td data-label="Max drawdown" data-field="maxDrawdown">${pct(-s.maxDrawdown)}</td>`;
}

function confidenceRow(c: TimeframeConfidence): SafeHtml {
  const dsr =
    c.deflated === null
      ? html`<span title="the research measured no configuration at this timeframe">${DASH}</span>`
      : html`${prob(c.deflated.dsr)} <span class="muted">(N = ${c.deflated.trials})</span>`;
  return html`<tr data-tf="${c.tf}">
    <th scope="row">${c.tf}</th>
    <td data-label="Coins" data-field="coins">${c.coins}</td>
    <td data-label="Days" data-field="days" class="text">${c.all.summary.periods} (${c.from ?? DASH} to \
${c.to ?? DASH})</td>
    ${summaryCells(c.all.summary)}
    <td data-label="DSR" data-field="dsr">${dsr}</td>
    <td data-label="Time in market"
    data-field="timeInMarket">${Number.isFinite(c.timeInMarket) ? `${(c.timeInMarket * 100).toFixed(1)}%` : DASH}</td>
    <td data-label="Win rate (95%)" data-field="winRate" class="text">${winCell(c.all)}</td>
  </tr>`;
}

function splitRows(c: TimeframeConfidence): SafeHtml {
  const row = (
    label: string,
    key: string,
    s: PerformanceSummary,
    win: string,
  ) => html`<tr data-tf="${c.tf}" data-split="${key}">
    <th scope="row">${c.tf} <span class="muted">${label}</span></th>
    <td data-label="Days" data-field="days">${s.periods}</td>
    ${summaryCells(s)}
    <td data-label="Win rate (95%)" class="text">${win}</td>
  </tr>`;
  return html`${[
    row("longs only", "long", c.long.summary, winCell(c.long)),
    row("shorts only", "short", c.short.summary, winCell(c.short)),
    row("basket rising", "up", c.up, DASH),
    row("basket falling", "down", c.down, DASH),
  ]}`;
}

function confidenceSection(view: LiveRecordView): SafeHtml {
  if (view.confidence.length === 0) return html``;
  return html`<section aria-labelledby="confidence-h" id="confidence">
  <h2 id="confidence-h">Confidence</h2>
  <p>Per timeframe, the coins above as one equal-weight portfolio rebalanced daily (UTC days), after the same costs. \
Annualised by √${DAYS_PER_YEAR}; PSR and DSR are probabilities (0.95 is the usual bar). A short record proves little: \
read the PSR and the interval, not the return.</p>
  <table id="live-confidence" class="stack">
    <thead><tr><th scope="col">Timeframe</th><th scope="col">Coins</th><th scope="col" class="text">Days</th>
    <th scope="col">Return</th><th scope="col">Volatility</th><th scope="col">Sharpe</th><th scope="col">PSR</th>
    <th scope="col">Max drawdown</th><th scope="col">DSR</th><th scope="col">Time in market</th><th scope="col"
    class="text">Win rate (95% interval)</th></tr></thead>
    <tbody>${view.confidence.map(confidenceRow)}</tbody>
  </table>
  <h3>Long and short, rising and falling markets</h3>
  <table id="live-splits" class="stack">
    <thead><tr><th scope="col">Part</th><th scope="col">Days</th><th scope="col">Return</th>
    <th scope="col">Volatility</th><th scope="col">Sharpe</th><th scope="col">PSR</th><th scope="col">Max drawdown</th>
    <th scope="col" class="text">Win rate (95% interval)</th></tr></thead>
    <tbody>${view.confidence.map(splitRows)}</tbody>
  </table>
</section>`;
}

function chainSection(heads: readonly DailyChainHead[], signedIn: boolean): SafeHtml {
  return html`<section aria-labelledby="log-h" id="signal-log">
  <h2 id="log-h">Tamper-evident signal log</h2>
  <p>Every live signal is chained: its SHA-256 hash covers the previous signal's hash and the signal itself, so no \
published signal can be edited, removed or reordered without changing every hash after it. Each alert carries the \
first 8 characters of its signal's hash. Below, each day's chain head (the hash of that day's last signal, MYT): \
anyone can note it today and check any later copy of the log against it.</p>
  ${
    signedIn
      ? html`<p><a href="/track-record/log.jsonl" id="log-download"
        download>Download the full log</a> (JSON lines) and check it with <code>npx signals verify-log \
signal-log.jsonl</code>.</p>`
      : html`<p>Members can download the full log here after \
<a href="/signin?next=%2Ftrack-record%2Flog.jsonl">signing in</a>, and check it with <code>npx signals \
verify-log</code>.</p>`
  }
  ${
    heads.length === 0
      ? html`<p>No live signal has been logged yet.</p>`
      : html`<table id="chain-heads" class="stack"><thead><tr><th scope="col" class="text">Day (MYT)</th>
        <th scope="col">Signals</th><th scope="col" class="text">Chain head</th></tr></thead>
  <tbody>${heads.map(
    (h) => html`<tr><td class="text">${h.day}</td><td>${h.events}</td>
    <td class="text"><code>${h.head}</code></td></tr>`,
  )}</tbody></table>`
  }
</section>`;
}

/** The method, as docs/track-record.md states it (kept here so the link works with no other site). */
function methodSection(costs: LiveCosts): SafeHtml {
  return html`<section aria-labelledby="method-h" id="method">
  <h2 id="method-h">How it is computed</h2>
  <ul>
    <li><strong>Live signals only.</strong> A coin and timeframe's record starts at its first signal issued live (at a \
candle close received in real time, when alerts went out). Signals computed on imported or backfilled history open no \
trade here; they appear only in the backtests on the member chart pages, labelled as backtests.</li>
    <li><strong>Fills.</strong> A signal at a candle's close is entered at the open of the next candle. It is left, at \
the next candle's open, after the first of: a close at or through the signal's own defense, the next signal in the \
other direction, an invalidation. One position at a time: a second signal in the same direction while one is held is \
skipped; a reversal exits and enters at the same open.</li>
    <li><strong>Costs.</strong> ${costsText(costs)}. Each fill is the slippage s worse (entry E = open·(1 ± s), exit X \
= open·(1 ∓ s)), and the fee f is paid on the notional traded on each side: a long keeps (1 − f)²·X/E, a short (1 − \
f)·(2 − (1 + f)·X/E), never below 0 (a short that loses its stake is liquidated; the coin leaves the portfolio). \
Funding: the derivatives dataset keeps only each venue's latest reading, not a history, so no funding is charged \
(shorts on perpetual futures usually receive it when the rate is positive); the rate per 8 hours is a setting of this \
computation.</li>
    <li><strong>Per coin.</strong> Win rate and average are over closed trades after costs; compounded is Π(growth) − \
1; buy and hold buys at the first trade's entry open and sells at the last close with the same costs; the drawdown is \
of the equity marked at every close (liquidation value). A position still held is shown apart and not counted.</li>
    <li><strong>Portfolio.</strong> Per timeframe, the daily return is the mean of the covered coins' daily equity \
returns (each coin from its first live day, starting flat). Return Π(1 + r) − 1; volatility = sample standard \
deviation × √${DAYS_PER_YEAR}; Sharpe = mean / standard deviation × √${DAYS_PER_YEAR}, risk-free rate 0; time in \
market = mean share of the coins' candles in a position.</li>
    <li><strong>PSR</strong> (Bailey &amp; López de Prado, "The Sharpe Ratio Efficient Frontier", Journal of Risk \
15(2), 2012): the probability that the true Sharpe ratio is above 0, PSR = Φ(SR·√(n − 1) / √(1 − γ₃·SR + ((γ₄ − \
1)/4)·SR²)), with the per-day SR, n days, the skewness γ₃ and the kurtosis γ₄ of the daily returns.</li>
    <li><strong>DSR</strong> (Bailey &amp; López de Prado, "The Deflated Sharpe Ratio", Journal of Portfolio \
Management 40(5), 2014): the PSR against SR* = √V·((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e))), the Sharpe ratio the \
best of N skill-less configurations would show, γ the Euler–Mascheroni constant. N = 47 configurations were tried per \
timeframe in the research (docs/signal-quality.md), V the variance of their per-day Sharpe ratios there; the research \
measured 1h, 4h and 1d only.</li>
    <li><strong>Win rate interval</strong>: the 95% Wilson score interval (Wilson, JASA 22, 1927).</li>
    <li><strong>Regimes.</strong> A day is "rising" when an equal-weight basket of the covered coins (buy and hold, \
rebalanced daily) gained over the ${REGIME_LOOKBACK_DAYS} days before it, "falling" when it lost.</li>
    <li><strong>Real markets only.</strong> The demo feed's synthetic prices are never counted: a coin's record holds \
only events computed on candles from a real exchange.</li>
    <li><strong>Ended signals only.</strong> Without a paid plan's current access, each series stands as it was just \
before the signal in force ${ENDED_SIGNAL_DELAY_HOURS} hours ago began, so no signal still in force shows here. The \
current signal is what the API and the paid plans' chart pages and alerts deliver.</li>
  </ul>
  <p>Members see each coin's chart, its signals and a backtest at any fee on the chart pages. Win rates and backtests \
are not part of the API.</p>
</section>`;
}

/** The public track record page. */
export function renderTrackRecordPage(
  ctx: PageContext,
  view: LiveRecordView,
  heads: readonly DailyChainHead[],
): string {
  const shown = view.series.filter((s) => s.live.liveSince !== null);
  return layout(
    { title: "Track record", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>Track record</h1>
<p id="track-note">Only signals this service issued live, entered at the next candle's open, after \
<strong id="stated-costs">${costsText(view.costs)}</strong>; signals count once they ended at least \
${ENDED_SIGNAL_DELAY_HOURS} hours ago. No backtest is mixed in. <a href="#method">How it is computed</a>.</p>
${
  shown.length === 0
    ? html`<p>No live signal has been recorded yet.</p>`
    : html`<table id="public-track-record" class="stack" aria-describedby="track-note">
  <thead><tr><th scope="col">Coin</th><th scope="col" class="text">Live since</th><th scope="col">Trades</th>
  <th scope="col">Win rate</th><th scope="col">Average per trade</th><th scope="col">Compounded</th>
  <th scope="col">Buy and hold</th><th scope="col">Max drawdown</th><th scope="col">Open position</th></tr></thead>
  <tbody>${shown.map(seriesRow)}</tbody>
</table>`
}
${confidenceSection(view)}
${chainSection(heads, ctx.signedIn !== null)}
${methodSection(view.costs)}
<p class="muted">Past results do not predict future ones. Educational information, not investment advice.</p>`,
  );
}
