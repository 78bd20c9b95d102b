/**
 * The public /track-record page (no sign-in, no Token): per coin and timeframe the backtest's
 * trades, win rate, average result per trade and compounded result after the stated fee, beside
 * buy-and-hold over the same period, and the method. The figures are the chart pages' own
 * (backtestFigures over the same cached data at the default fee). Pure rendering.
 */
import type { PageContext } from "./auth-pages.ts";
import { DEFAULT_FEE_PCT, type BacktestResult } from "./backtest.ts";
import type { ChartData } from "./chart-data.ts";
import { backtestFigures, formatFee, signClass } from "./chart-page.ts";
import { formatMytDate } from "./format.ts";
import { html, layout, type SafeHtml } from "./html.ts";
import { ENDED_SIGNAL_DELAY_MS } from "../accounts/entitlement.ts";

const ENDED_SIGNAL_DELAY_HOURS = ENDED_SIGNAL_DELAY_MS / 3_600_000;

function seriesRow(data: ChartData, bt: BacktestResult, until: number | null): SafeHtml {
  const f = backtestFigures(bt);
  return html`<tr data-series="${data.symbol}/${data.tf}">
    <th scope="row">${data.symbol} <span class="muted">${data.tf}</span></th>
    <td data-label="Trades" data-field="trades">${f.trades}</td>
    <td data-label="Win rate" data-field="winRate">${f.winRate}</td>
    <td data-label="Average per trade" data-field="avgResult" class="${signClass(bt.avgResultPct)}">${f.avgResult}</td>
    <td data-label="Compounded" data-field="total" class="${signClass(bt.totalPct)}">${f.total}</td>
    <td data-label="Buy and hold" data-field="buyHold" class="${signClass(bt.buyHoldPct)}">${f.buyHold}</td>
    <td data-label="Max drawdown" data-field="drawdown">${f.drawdown}</td>
    <td data-label="Period" class="text period"${until === null ? "" : html` data-until="${until}"`}>${bt.from === null || bt.to === null ? "no closed trade yet" : `${formatMytDate(bt.from)} to ${formatMytDate(bt.to)}`}</td>
  </tr>`;
}

/** The method, as docs/track-record.md states it (kept here so the link works with no other site). */
const METHOD = html`<section aria-labelledby="method-h" id="method">
  <h2 id="method-h">How it is computed</h2>
  <ul>
    <li><strong>Trades.</strong> Every long or strong-long signal is a long trade, every short or strong-short signal a short trade, entered at the candle close that confirmed it.</li>
    <li><strong>Exit.</strong> The first of: a later close at or through the signal's own defense level (out at that close); the next signal in the other direction; an invalidation (out at that signal's close).</li>
    <li><strong>One position at a time.</strong> A reversal ends one trade and opens the next at the same close; a second signal in the same direction while a position is held is skipped. A position still open at the last close is left out.</li>
    <li><strong>Fee.</strong> ${formatFee(DEFAULT_FEE_PCT)} of the position on every entry and every exit: a trade's result after fees is (1 + r) × (1 − fee)² − 1. A win is a trade above zero after fees; the average is the mean of those results.</li>
    <li><strong>Compounded.</strong> The product of (1 + result) over the trades, minus one: all capital in each trade, no leverage, no slippage.</li>
    <li><strong>Buy and hold.</strong> Bought at the first trade's entry close and sold at the last close of the same history, paying the same fee each way.</li>
    <li><strong>Maximum drawdown.</strong> The largest fall from an earlier peak of the strategy's equity marked at every candle close.</li>
    <li><strong>Data.</strong> Only what this service stored from real markets: the exchange's candles since each coin's first candle here, and the signals the engine produced on them (imports included, which send no alerts). The demo feed's synthetic prices are never counted. The numbers are computed once per candle close or new signal, not per view.</li>
    <li><strong>Ended signals only.</strong> A signal is counted once it has ended at least ${ENDED_SIGNAL_DELAY_HOURS} hours ago: each series stands as it was just before the signal in force ${ENDED_SIGNAL_DELAY_HOURS} hours ago, so no signal still in force, its defense or a forming setup shows here. The current signal is what the API and the paid plans' chart pages and alerts deliver.</li>
  </ul>
  <p>Members see each coin's chart, the signals with their results, the equity curve and the backtest at any fee from 0 to 1% on the chart pages; on the node and founding-seat plans with an active subscription, to the last close with the current signal. Win rates and backtests are not part of the API.</p>
</section>`;

/**
 * The public track record page over every series' data; `until` is the moment each series
 * stands at (web/ended-history.ts), null for a series shown to its last close.
 */
export function renderTrackRecordPage(ctx: PageContext, series: ReadonlyArray<{ data: ChartData; backtest: BacktestResult; until: number | null }>): string {
  const shown = series.filter((s) => s.data.record.trades.length > 0);
  return layout(
    { title: "Track record", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>Track record</h1>
<p id="track-note">How every coin's signals did on each timeframe, after a fee of <strong id="stated-fee">${formatFee(DEFAULT_FEE_PCT)} per side</strong>, beside simply buying and holding over the same period; signals count once they ended at least ${ENDED_SIGNAL_DELAY_HOURS} hours ago. <a href="#method">How it is computed</a>.</p>
${shown.length === 0
  ? html`<p>No signal has been recorded yet.</p>`
  : html`<table id="public-track-record" class="stack" aria-describedby="track-note">
  <thead><tr><th scope="col">Coin</th><th scope="col">Trades</th><th scope="col">Win rate</th><th scope="col">Average per trade</th><th scope="col">Compounded</th><th scope="col">Buy and hold</th><th scope="col">Max drawdown</th><th scope="col" class="text">Period</th></tr></thead>
  <tbody>${shown.map((s) => seriesRow(s.data, s.backtest, s.until))}</tbody>
</table>
<p class="muted">Members see each of these on its chart page (<a href="/charts">Charts</a>, after signing in), with its signals, the equity curve and a fee of their choice; the node and founding-seat plans see it to the last close, with the current signal.</p>`}
${METHOD}
<p class="muted">Past results do not predict future ones. Educational information, not investment advice.</p>`,
  );
}
