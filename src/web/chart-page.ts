/**
 * The chart pages: the list of coins, and per coin and timeframe the candlestick chart (with a
 * volume pane) with the signal history as markers and the current levels as lines, followed by
 * the track record and the backtest at a chosen fee with its equity curve against buy-and-hold.
 * A banner says when the coin's feed is not live. Pure rendering over ChartData.
 */

import { ENDED_SIGNAL_DELAY_MS } from "../accounts/entitlement.ts";
import { DEMO_DATA_LABEL } from "../market/provenance.ts";
import type { SignalName } from "../market/snapshot.ts";
import type { Timeframe } from "../market/timeframes.ts";
import { ALLOWED_FEES_PCT, type BacktestResult, DEFAULT_FEE_PCT } from "../track-record/backtest.ts";
import { type ChartData, HISTORY_ROWS } from "../track-record/chart-data.ts";
import { directionOf, type SignalStats, type Trade } from "../track-record/track-record.ts";
import type { PageContext } from "./auth-pages.ts";
import { formatInteger, formatMyt, formatPercent, formatPrice } from "./format.ts";
import { html, jsonScript, layout, type SafeHtml } from "./html.ts";
import type { CoinFeedStatus } from "./status-page.ts";

type SignedInContext = PageContext & { signedIn: { email: string; csrfToken: string } };

/** Chart times are shown in MYT; lightweight-charts draws UTC, so times are shifted by +8 h. */
const MYT_SHIFT_SECONDS = 8 * 3600;
/** Points of the equity curve sent to the page (the drawdown is computed on every close). */
const EQUITY_POINTS = 1500;

const SIGNAL_LABELS: Record<SignalName, string> = {
  STRONG_LONG: "Strong long",
  LONG: "Long",
  SHORT: "Short",
  STRONG_SHORT: "Strong short",
  NONE: "None (invalidated)",
};

/**
 * The chart page's path for a coin and timeframe (the same one alert messages link to), with a fee other than the
 * default.
 */
export function chartPath(symbol: string, tf: Timeframe, feePct: number = DEFAULT_FEE_PCT): string {
  const fee = feePct === DEFAULT_FEE_PCT ? "" : `&fee=${feePct}`;
  return `/charts/${encodeURIComponent(symbol)}?tf=${encodeURIComponent(tf)}${fee}`;
}

/** "0.1%" : a fee per side as the pages state it. */
export function formatFee(feePct: number): string {
  return `${feePct}%`;
}

/** The backtest's figures as both pages print them (so /track-record and the chart page agree to the character). */
export function backtestFigures(
  bt: BacktestResult,
): Record<"trades" | "winRate" | "avgResult" | "total" | "buyHold" | "drawdown" | "buyHoldDrawdown", string> {
  return {
    trades: formatInteger(bt.trades),
    winRate: bt.winRatePct === null ? "\u2013" : `${bt.winRatePct.toFixed(1)}%`,
    avgResult: formatPercent(bt.avgResultPct),
    total: formatPercent(bt.totalPct),
    buyHold: formatPercent(bt.buyHoldPct),
    drawdown: bt.maxDrawdownPct === null ? "\u2013" : formatPercent(-bt.maxDrawdownPct),
    buyHoldDrawdown: bt.buyHoldMaxDrawdownPct === null ? "\u2013" : formatPercent(-bt.buyHoldMaxDrawdownPct),
  };
}

/** "90 seconds", "5 minutes": the staleness limit as the banner states it. */
function formatMinutes(ms: number): string {
  return ms < 120_000 ? `${Math.round(ms / 1000)} seconds` : `${Math.round(ms / 60_000)} minutes`;
}

/** "pos" / "neg" / "": the colour class of a signed figure. */
export function signClass(value: number | null): string {
  return value === null || value === 0 ? "" : value > 0 ? "pos" : "neg";
}

function signalBadge(signal: SignalName): SafeHtml {
  const d = directionOf(signal);
  const tone = d === 1 ? "sig-long" : d === -1 ? "sig-short" : "sig-none";
  return html`<span class="${tone}">${SIGNAL_LABELS[signal]}</span>`;
}

function percentCell(value: number | null, label: string): SafeHtml {
  return html`<td data-label="${label}" class="${signClass(value)}">${formatPercent(value)}</td>`;
}

/** Links to a coin's timeframes; a chosen fee goes along. */
function tfLinks(
  symbol: string,
  timeframes: readonly Timeframe[],
  current: Timeframe | null,
  feePct: number = DEFAULT_FEE_PCT,
): SafeHtml {
  return html`<ul class="tf-links">${timeframes.map(
    (tf) =>
      html`<li><a href="${chartPath(symbol, tf, feePct)}"${
        tf === current
          ? html` \
aria-current="page"`
          : ""
      }>${tf}</a>
        </li>`,
  )}</ul>`;
}

/** The list of coins with links to their timeframes. */
export function renderChartIndexPage(
  ctx: SignedInContext,
  coins: ReadonlyArray<{ symbol: string; timeframes: readonly Timeframe[]; demo: boolean }>,
): string {
  return layout(
    { title: "Charts", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "charts" },
    html`<h1>Charts</h1>
${
  coins.length === 0
    ? html`<p>No coin has candles yet.</p>`
    : html`<p>Signal history, win rates and a simple backtest per coin and timeframe.</p>
<ul class="coin-list">${coins.map(
        (c) => html`<li>
          <h2>${c.symbol}${
            c.demo
              ? html` <span class="muted \
demo-label">(${DEMO_DATA_LABEL})</span>`
              : ""
          }</h2>\
<nav aria-label="${c.symbol} timeframes">${tfLinks(c.symbol, c.timeframes, null)}</nav></li>`,
      )}</ul>`
}`,
  );
}

/**
 * What the viewer may see of the series (accounts/entitlement.ts): everything, or the price
 * history with the signals that ended by `until` (track-record/ended-history.ts).
 */
export type ChartAccess = { readonly current: true } | { readonly current: false; readonly until: number };

/** Every figure of a demo coin's page comes from synthetic prices: the page says so before any of them. */
function demoNotice(): SafeHtml {
  return html`<p class="notice warn" id="demo-data" role="note"><strong>${capitalised(DEMO_DATA_LABEL)}.</strong> This \
coin's candles come from the demo feed, not from a market: its signals, levels, track record and backtest are samples \
that show how the pages work, not results.</p>`;
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** Why a viewer without current access sees no levels, and what the page shows instead. */
function endedNotice(until: number): SafeHtml {
  return html`<p class="notice warn" id="ended-only" role="status">The current signal, whether it is confirmed, its \
defense and the forming setup are for the node and founding-seat plans with an active subscription (here and through \
the API). This page shows the price history to the last close and the signals that ended at least \
${ENDED_SIGNAL_DELAY_MS / 3_600_000} hours ago: the markers and every table below stand as of ${formatMyt(until)}. \
<a href="/account">Your plan</a>.</p>`;
}

function levelsSection(data: ChartData, access: ChartAccess): SafeHtml {
  if (!access.current) return endedNotice(access.until);
  const levels = data.levels;
  if (levels === null) return html`<p>No confirmed reading yet for this timeframe.</p>`;
  const arming = levels.arming;
  return html`<dl class="facts" id="levels">
  <dt>At the close of</dt><dd>${formatMyt(levels.asOf)}</dd>
  <dt>Signal</dt><dd id="current-signal">${signalBadge(levels.signal)}</dd>
  <dt>Close</dt><dd>${formatPrice(levels.close)}</dd>
  <dt>Defense</dt><dd>${levels.defense === null ? "none" : formatPrice(levels.defense)}</dd>
  <dt>Arming</dt><dd>${
    arming === null
      ? "no setup forming"
      : html`${arming.dir === 1 ? "long" : "short"} setup, score ${arming.score}/10: trigger \
${formatPrice(arming.trigger)}, invalidation ${formatPrice(arming.invalidation)}`
  }</dd>
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

function trackRecordSection(data: ChartData, access: ChartAccess): SafeHtml {
  const { record } = data;
  const which = access.current ? "in the stored history" : `that ended by ${formatMyt(access.until)}`;
  return html`<section aria-labelledby="record-h">
  <h2 id="record-h">Track record</h2>
  <p class="muted" id="record-note">Every ${data.symbol} ${data.tf} signal ${which}, entered at its confirmed close; \
results before fees.</p>
  <div class="table-wrap"><table id="track-record" class="stack" aria-labelledby="record-h"
  aria-describedby="record-note">
    <thead><tr><th scope="col">Signal</th><th scope="col">Trades</th><th scope="col">Closed</th>
    <th scope="col">Wins</th><th scope="col">Win rate</th><th scope="col">Average result</th></tr></thead>
    <tbody>${record.bySignal.map(statsRow)}</tbody>
    <tfoot>${statsRow(record.all)}</tfoot>
  </table></div>
</section>`;
}

function backtestSection(data: ChartData, bt: BacktestResult): SafeHtml {
  const open = bt.openTrade;
  const figures = backtestFigures(bt);
  const period =
    bt.from === null || bt.to === null ? "no closed trade yet" : `${formatMyt(bt.from)} to ${formatMyt(bt.to)}`;
  return html`<section aria-labelledby="backtest-h">
  <h2 id="backtest-h">Backtest</h2>
  <form method="get" action="/charts/${data.symbol}" class="fee-form">
    <input type="hidden" name="tf" value="${data.tf}">
    <label for="fee">Fee per side, % of the position</label>
    <select id="fee" name="fee">${ALLOWED_FEES_PCT.map(
      (fee) =>
        html`<option value="${String(fee)}"${fee === bt.feePct ? html` selected` : ""}>${formatFee(fee)}</option>`,
    )}</select>
    <button type="submit">Recompute</button>
  </form>
  <dl class="facts" id="backtest" aria-labelledby="backtest-h">
    <dt>Fee</dt><dd id="backtest-fee">${formatFee(bt.feePct)} per side (entry and exit)</dd>
    <dt>Period</dt><dd>${period}</dd>
    <dt>Trades</dt><dd id="backtest-trades">${figures.trades}</dd>
    <dt>Win rate</dt><dd id="backtest-winrate">${figures.winRate}</dd>
    <dt>Average result per trade</dt><dd id="backtest-avg"
    class="${signClass(bt.avgResultPct)}">${figures.avgResult}</dd>
    <dt>Total, compounded</dt><dd id="backtest-total" class="${signClass(bt.totalPct)}">${figures.total}</dd>
    <dt>Buy and hold, same period</dt><dd id="backtest-buyhold"
    class="${signClass(bt.buyHoldPct)}">${figures.buyHold}</dd>
    <dt>Maximum drawdown</dt><dd id="backtest-drawdown">${figures.drawdown} <span class="muted">(buy and hold: \
<span id="backtest-buyhold-drawdown">${figures.buyHoldDrawdown}</span>)</span></dd>
    <dt>Open position</dt><dd>${
      open === null
        ? "none"
        : html`${signalBadge(open.signal)} since ${formatMyt(open.entryTime)} at ${formatPrice(open.entryPrice)}: \
${formatPercent(open.resultPct)} at the last close before fees (not in the total)`
    }</dd>
  </dl>
  ${
    bt.curve.length === 0
      ? ""
      : html`<h3 id="equity-h">Equity against buy-and-hold</h3>
  <div id="equity-chart" class="chart equity" role="img" aria-label="Line chart of the backtest's equity and of \
buy-and-hold, both starting at 100 on ${formatMyt(bt.curve[0]!.time)}: the strategy ends at \
${(100 + (bt.totalPct ?? 0)).toFixed(1)}, buy-and-hold at ${(100 + (bt.buyHoldPct ?? 0)).toFixed(1)}."></div>
  <ul class="legend"><li><span class="swatch strategy"></span>strategy</li>
  <li><span class="swatch buyhold"></span>buy and hold</li></ul>`
  }
  <p class="muted">One position at a time, entered and left at candle closes; a fee of ${formatFee(bt.feePct)} is paid \
on each entry and each exit; a win is a trade above zero after fees. The drawdown is measured on the equity marked at \
every close. <a href="/track-record#method">How it is computed</a>. Educational information, not investment advice.</p>
</section>`;
}

/** Says when the coin's feed is not live: the chart and the numbers end at the last stored candle. */
function staleBanner(symbol: string, status: CoinFeedStatus | null, now: number, staleAfterMs: number): SafeHtml {
  if (status === null || status.state === "live") return html``;
  const last =
    status.lastCandleOpenTime === null
      ? "no closed candle yet"
      : `the last closed ${status.baseTf} candle opened ${formatMyt(status.lastCandleOpenTime)}`;
  return status.state === "stale"
    ? html`<p class="notice warn" id="stale-banner" role="status"><strong>${symbol} data is stale:</strong> no update \
has arrived since ${formatMyt(status.lastUpdateAt)}, more than ${formatMinutes(staleAfterMs)} before \
${formatMyt(now)}; ${last}. The chart and the numbers below end there, and the API answers <code>stale</code> for \
${symbol} until the feed resumes. See <a href="/status">feed status</a>.</p>`
    : html`<p class="notice warn" id="stale-banner" role="status"><strong>${symbol} data is behind:</strong> ${last}, \
and the feed is still catching up. The chart and the numbers below end there. See <a href="/status">feed \
status</a>.</p>`;
}

function outcomeCell(trade: Trade | undefined): SafeHtml {
  if (trade === undefined) return html`<td data-label="Result">\u2013</td>`;
  if (trade.exitReason === "open") return html`<td data-label="Result">open, ${formatPercent(trade.resultPct)}</td>`;
  const how =
    trade.exitReason === "defense" ? "defense" : trade.exitReason === "opposite" ? "opposite signal" : "invalidated";
  return html`<td data-label="Result"
    class="${trade.resultPct > 0 ? "pos" : trade.resultPct < 0 ? "neg" : ""}">${formatPercent(trade.resultPct)} \
<span class="muted">(${how})</span></td>`;
}

function historySection(data: ChartData): SafeHtml {
  const tradeAt = new Map(data.record.trades.map((t) => [t.entryTime, t]));
  const latest = data.events.slice(-HISTORY_ROWS).reverse();
  return html`<section aria-labelledby="history-h">
  <h2 id="history-h">Signal history</h2>
  ${
    latest.length === 0
      ? html`<p>No signal events stored for this timeframe yet.</p>`
      : html`<p class="muted" id="history-note">The latest ${latest.length} of ${formatInteger(data.events.length)} \
signal changes, newest first. Times in MYT (candle open).</p>
  <div class="table-wrap"><table id="history" class="stack" aria-labelledby="history-h" aria-describedby="history-note">
    <thead><tr><th scope="col">Candle</th><th scope="col" class="text">Signal</th><th scope="col">Close</th>
    <th scope="col">Defense</th><th scope="col">Result</th></tr></thead>
    <tbody>${latest.map(
      (e) => html`<tr>
      <td data-label="Candle">${formatMyt(e.candleOpenTime)}</td>
      <td data-label="Signal" class="text">${signalBadge(e.signal)}</td>
      <td data-label="Close">${formatPrice(e.price)}</td>
      <td data-label="Defense">${e.defense === null ? "\u2013" : formatPrice(e.defense)}</td>
      ${
        directionOf(e.signal) === 0
          ? html`<td data-label="Result">\u2013</td>`
          : outcomeCell(tradeAt.get(e.candleOpenTime))
      }
    </tr>`,
    )}</tbody>
  </table></div>`
  }
</section>`;
}

/** What chart.js draws: candles (with volume), markers, levels and the equity curve, with MYT-shifted times. */
export function chartJson(
  data: ChartData,
  bt: BacktestResult,
): {
  intraday: boolean;
  candles: number[][];
  markers: Array<{ time: number; signal: SignalName }>;
  levels: { defense: number | null; trigger: number | null; invalidation: number | null } | null;
  equity: number[][];
} {
  const first = data.candles[0]?.openTime ?? Number.POSITIVE_INFINITY;
  const t = (ms: number) => Math.floor(ms / 1000) + MYT_SHIFT_SECONDS;
  const levels = data.levels;
  const stride = Math.max(1, Math.ceil(bt.curve.length / EQUITY_POINTS));
  const equity = bt.curve
    .filter((_, i) => i % stride === 0 || i === bt.curve.length - 1)
    .map((p) => [t(p.time), round4(p.strategy * 100), round4(p.buyHold * 100)]);
  return {
    intraday: data.tf !== "1d",
    candles: data.candles.map((c) => [t(c.openTime), c.open, c.high, c.low, c.close, c.volume]),
    markers: data.events
      .filter((e) => e.candleOpenTime >= first)
      .map((e) => ({ time: t(e.candleOpenTime), signal: e.signal })),
    levels:
      levels === null
        ? null
        : {
            defense: levels.defense,
            trigger: levels.arming?.trigger ?? null,
            invalidation: levels.arming?.invalidation ?? null,
          },
    equity,
  };
}

const round4 = (v: number) => Math.round(v * 10_000) / 10_000;

/**
 * The chart page of one coin and timeframe, with the backtest at the chosen fee and the coin's
 * feed status at `now`; without current access, `data` is the ended-signals view and the page says so.
 */
export function renderChartPage(
  ctx: SignedInContext,
  data: ChartData,
  bt: BacktestResult,
  feed: { status: CoinFeedStatus | null; now: number; staleAfterMs: number },
  scripts: readonly string[],
  access: ChartAccess,
): string {
  const json = chartJson(data, bt);
  return layout(
    {
      title: `${data.symbol} ${data.tf} chart`,
      stylesheet: ctx.stylesheet,
      signedIn: ctx.signedIn,
      current: "charts",
      scripts,
    },
    html`<h1>${data.symbol} <span class="muted">${data.tf}</span></h1>
<nav aria-label="Timeframes">${tfLinks(data.symbol, data.timeframes, data.tf, bt.feePct)}</nav>
${staleBanner(data.symbol, feed.status, feed.now, feed.staleAfterMs)}
${data.demo ? demoNotice() : ""}
<section aria-labelledby="now-h">
  <h2 id="now-h">Current levels</h2>
  ${levelsSection(data, access)}
</section>
<section aria-labelledby="chart-h">
  <h2 id="chart-h">Chart</h2>
  ${
    data.candles.length === 0
      ? html`<p>No closed candles for this timeframe yet.</p>`
      : html`<p id="chart-readout" class="readout muted">Point at a candle to read its open, high, low, close and \
volume.</p>
  <div id="chart" class="chart" role="img" aria-label="Candlestick chart of ${data.symbol} on ${data.tf} with a volume \
pane: the last ${data.candles.length} candles with ${json.markers.length} signal \
markers${access.current ? " and the current levels as lines" : ""}. The same information is in the tables below."></div>
  <noscript><p>The chart needs JavaScript; the tables below hold the same information.</p></noscript>
  <ul class="legend">
    <li><span class="sig-long">L / L+</span> long / strong long</li>
    <li><span class="sig-short">S / S+</span> short / strong short</li>
    <li><span class="sig-none">\u00d7</span> invalidated (none)</li>
    ${
      access.current
        ? html`<li><span class="swatch defense"></span>defense</li>
    <li><span class="swatch trigger"></span>arming trigger</li>
    <li><span class="swatch invalidation"></span>arming invalidation</li>`
        : ""
    }
  </ul>
  <p class="muted">Times in MYT. ${formatInteger(data.candles.length)} of ${formatInteger(data.totalCandles)} closed \
candles shown. Charting by <a href="https://www.tradingview.com/">TradingView</a> Lightweight Charts\u2122.</p>
  ${jsonScript("chart-data", json)}`
  }
</section>
${backtestSection(data, bt)}
${trackRecordSection(data, access)}
${historySection(data)}`,
  );
}
