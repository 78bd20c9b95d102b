/**
 * The chart pages: the list of coins, and per coin and timeframe the candlestick chart with the
 * signal history as markers and the current levels as lines, followed by the track record and
 * the backtest. Pure rendering over ChartData.
 */
import type { Timeframe } from "../market/timeframes.ts";
import type { SignalName } from "../market/snapshot.ts";
import type { PageContext } from "./auth-pages.ts";
import { HISTORY_ROWS, type ChartData } from "./chart-data.ts";
import { formatInteger, formatMyt, formatPercent, formatPrice } from "./format.ts";
import { html, jsonScript, layout, type SafeHtml } from "./html.ts";
import { directionOf, type SignalStats, type Trade } from "./track-record.ts";

type SignedInContext = PageContext & { signedIn: { email: string; csrfToken: string } };

/** Chart times are shown in MYT; lightweight-charts draws UTC, so times are shifted by +8 h. */
const MYT_SHIFT_SECONDS = 8 * 3600;

const SIGNAL_LABELS: Record<SignalName, string> = {
  STRONG_LONG: "Strong long",
  LONG: "Long",
  SHORT: "Short",
  STRONG_SHORT: "Strong short",
  NONE: "None (invalidated)",
};

/** The chart page's path for a coin and timeframe (the same one alert messages link to). */
export function chartPath(symbol: string, tf: Timeframe): string {
  return `/charts/${encodeURIComponent(symbol)}?tf=${encodeURIComponent(tf)}`;
}

function signalBadge(signal: SignalName): SafeHtml {
  const d = directionOf(signal);
  return html`<span class="${d === 1 ? "sig-long" : d === -1 ? "sig-short" : "sig-none"}">${SIGNAL_LABELS[signal]}</span>`;
}

function percentCell(value: number | null, label: string): SafeHtml {
  return html`<td data-label="${label}" class="${value === null || value === 0 ? "" : value > 0 ? "pos" : "neg"}">${formatPercent(value)}</td>`;
}

function tfLinks(symbol: string, timeframes: readonly Timeframe[], current: Timeframe | null): SafeHtml {
  return html`<ul class="tf-links">${timeframes.map(
    (tf) => html`<li><a href="${chartPath(symbol, tf)}"${tf === current ? html` aria-current="page"` : ""}>${tf}</a></li>`,
  )}</ul>`;
}

/** The list of coins with links to their timeframes. */
export function renderChartIndexPage(ctx: SignedInContext, coins: ReadonlyArray<{ symbol: string; timeframes: readonly Timeframe[] }>): string {
  return layout(
    { title: "Charts", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "charts" },
    html`<h1>Charts</h1>
${coins.length === 0
  ? html`<p>No coin has candles yet.</p>`
  : html`<p>Signal history, win rates and a simple backtest per coin and timeframe.</p>
<ul class="coin-list">${coins.map(
    (c) => html`<li><h2>${c.symbol}</h2><nav aria-label="${c.symbol} timeframes">${tfLinks(c.symbol, c.timeframes, null)}</nav></li>`,
  )}</ul>`}`,
  );
}

function levelsSection(data: ChartData): SafeHtml {
  const levels = data.levels;
  if (levels === null) return html`<p>No confirmed reading yet for this timeframe.</p>`;
  const arming = levels.arming;
  return html`<dl class="facts" id="levels">
  <dt>At the close of</dt><dd>${formatMyt(levels.asOf)}</dd>
  <dt>Signal</dt><dd id="current-signal">${signalBadge(levels.signal)}</dd>
  <dt>Close</dt><dd>${formatPrice(levels.close)}</dd>
  <dt>Defense</dt><dd>${levels.defense === null ? "none" : formatPrice(levels.defense)}</dd>
  <dt>Arming</dt><dd>${arming === null
    ? "no setup forming"
    : html`${arming.dir === 1 ? "long" : "short"} setup, score ${arming.score}/10: trigger ${formatPrice(arming.trigger)}, invalidation ${formatPrice(arming.invalidation)}`}</dd>
</dl>`;
}

function statsRow(stats: SignalStats): SafeHtml {
  const label = stats.signal === "ALL" ? html`<strong>All signals</strong>` : signalBadge(stats.signal);
  return html`<tr>
    <th scope="row">${label}</th>
    <td data-label="Trades">${formatInteger(stats.count)}</td>
    <td data-label="Closed">${formatInteger(stats.closed)}</td>
    <td data-label="Wins">${formatInteger(stats.wins)}</td>
    <td data-label="Win rate">${stats.winRatePct === null ? "\u2013" : `${stats.winRatePct.toFixed(1)}%`}</td>
    ${percentCell(stats.avgResultPct, "Average result")}
  </tr>`;
}

function trackRecordSection(data: ChartData): SafeHtml {
  const { record } = data;
  const bt = record.backtest;
  const open = bt.openTrade;
  return html`<section aria-labelledby="record-h">
  <h2 id="record-h">Track record</h2>
  <p class="muted" id="record-note">Every ${data.symbol} ${data.tf} signal in the stored history, entered at its confirmed close.</p>
  <div class="table-wrap"><table id="track-record" class="stack" aria-labelledby="record-h" aria-describedby="record-note">
    <thead><tr><th scope="col">Signal</th><th scope="col">Trades</th><th scope="col">Closed</th><th scope="col">Wins</th><th scope="col">Win rate</th><th scope="col">Average result</th></tr></thead>
    <tbody>${record.bySignal.map(statsRow)}</tbody>
    <tfoot>${statsRow(record.all)}</tfoot>
  </table></div>
  <h3 id="backtest-h">Backtest</h3>
  <dl class="facts" id="backtest" aria-labelledby="backtest-h">
    <dt>Trades</dt><dd id="backtest-trades">${formatInteger(bt.trades)}</dd>
    <dt>Wins</dt><dd>${formatInteger(bt.wins)}${bt.winRatePct === null ? "" : ` (${bt.winRatePct.toFixed(1)}%)`}</dd>
    <dt>Total, compounded</dt><dd id="backtest-total" class="${bt.totalPct === null ? "" : bt.totalPct >= 0 ? "pos" : "neg"}">${formatPercent(bt.totalPct)}</dd>
    <dt>Open position</dt><dd>${open === null
      ? "none"
      : html`${signalBadge(open.signal)} since ${formatMyt(open.entryTime)} at ${formatPrice(open.entryPrice)}: ${formatPercent(open.resultPct)} at the last close (not in the total)`}</dd>
  </dl>
  <p class="muted">How it is computed: each signal is entered at the close that confirmed it and left at the first later close at or through its defense, or at the next opposite signal or invalidation, whichever comes first. A win is a result above zero. Open trades are valued at the last close and left out of win rates and averages. The backtest holds one position at a time (a reversal closes one trade and opens the next; a second signal in the same direction is skipped) and compounds the closed trades, with no fees or slippage. Educational information, not investment advice.</p>
</section>`;
}

function outcomeCell(trade: Trade | undefined): SafeHtml {
  if (trade === undefined) return html`<td data-label="Result">\u2013</td>`;
  if (trade.exitReason === "open") return html`<td data-label="Result">open, ${formatPercent(trade.resultPct)}</td>`;
  const how = trade.exitReason === "defense" ? "defense" : trade.exitReason === "opposite" ? "opposite signal" : "invalidated";
  return html`<td data-label="Result" class="${trade.resultPct > 0 ? "pos" : trade.resultPct < 0 ? "neg" : ""}">${formatPercent(trade.resultPct)} <span class="muted">(${how})</span></td>`;
}

function historySection(data: ChartData): SafeHtml {
  const tradeAt = new Map(data.record.trades.map((t) => [t.entryTime, t]));
  const latest = data.events.slice(-HISTORY_ROWS).reverse();
  return html`<section aria-labelledby="history-h">
  <h2 id="history-h">Signal history</h2>
  ${latest.length === 0
    ? html`<p>No signal events stored for this timeframe yet.</p>`
    : html`<p class="muted" id="history-note">The latest ${latest.length} of ${formatInteger(data.events.length)} signal changes, newest first. Times in MYT (candle open).</p>
  <div class="table-wrap"><table id="history" class="stack" aria-labelledby="history-h" aria-describedby="history-note">
    <thead><tr><th scope="col">Candle</th><th scope="col" class="text">Signal</th><th scope="col">Close</th><th scope="col">Defense</th><th scope="col">Result</th></tr></thead>
    <tbody>${latest.map(
      (e) => html`<tr>
      <td data-label="Candle">${formatMyt(e.candleOpenTime)}</td>
      <td data-label="Signal" class="text">${signalBadge(e.signal)}</td>
      <td data-label="Close">${formatPrice(e.price)}</td>
      <td data-label="Defense">${e.defense === null ? "\u2013" : formatPrice(e.defense)}</td>
      ${directionOf(e.signal) === 0 ? html`<td data-label="Result">\u2013</td>` : outcomeCell(tradeAt.get(e.candleOpenTime))}
    </tr>`,
    )}</tbody>
  </table></div>`}
</section>`;
}

/** What chart.js draws: candles and markers with MYT-shifted times, and the current levels. */
export function chartJson(data: ChartData): { intraday: boolean; candles: number[][]; markers: Array<{ time: number; signal: SignalName }>; levels: { defense: number | null; trigger: number | null; invalidation: number | null } | null } {
  const first = data.candles[0]?.openTime ?? Number.POSITIVE_INFINITY;
  const t = (ms: number) => Math.floor(ms / 1000) + MYT_SHIFT_SECONDS;
  const levels = data.levels;
  return {
    intraday: data.tf !== "1d",
    candles: data.candles.map((c) => [t(c.openTime), c.open, c.high, c.low, c.close]),
    markers: data.events.filter((e) => e.candleOpenTime >= first).map((e) => ({ time: t(e.candleOpenTime), signal: e.signal })),
    levels: levels === null
      ? null
      : { defense: levels.defense, trigger: levels.arming?.trigger ?? null, invalidation: levels.arming?.invalidation ?? null },
  };
}

/** The chart page of one coin and timeframe. */
export function renderChartPage(ctx: SignedInContext, data: ChartData, scripts: readonly string[]): string {
  const json = chartJson(data);
  return layout(
    { title: `${data.symbol} ${data.tf} chart`, stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "charts", scripts },
    html`<h1>${data.symbol} <span class="muted">${data.tf}</span></h1>
<nav aria-label="Timeframes">${tfLinks(data.symbol, data.timeframes, data.tf)}</nav>
<section aria-labelledby="now-h">
  <h2 id="now-h">Current levels</h2>
  ${levelsSection(data)}
</section>
<section aria-labelledby="chart-h">
  <h2 id="chart-h">Chart</h2>
  ${data.candles.length === 0
    ? html`<p>No closed candles for this timeframe yet.</p>`
    : html`<div id="chart" class="chart" role="img" aria-label="Candlestick chart of ${data.symbol} on ${data.tf}: the last ${data.candles.length} candles with ${json.markers.length} signal markers and the current levels as lines. The same information is in the tables below."></div>
  <noscript><p>The chart needs JavaScript; the tables below hold the same information.</p></noscript>
  <ul class="legend">
    <li><span class="sig-long">L / L+</span> long / strong long</li>
    <li><span class="sig-short">S / S+</span> short / strong short</li>
    <li><span class="sig-none">\u00d7</span> invalidated (none)</li>
    <li><span class="swatch defense"></span>defense</li>
    <li><span class="swatch trigger"></span>arming trigger</li>
    <li><span class="swatch invalidation"></span>arming invalidation</li>
  </ul>
  <p class="muted">Times in MYT. ${formatInteger(data.candles.length)} of ${formatInteger(data.totalCandles)} closed candles shown. Charting by <a href="https://www.tradingview.com/">TradingView</a> Lightweight Charts\u2122.</p>
  ${jsonScript("chart-data", json)}`}
</section>
${trackRecordSection(data)}
${historySection(data)}`,
  );
}
