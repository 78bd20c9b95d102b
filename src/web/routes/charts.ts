/**
 * The charts a signed-in member may open: `/charts` (the coins with candles) and
 * `/charts/<SYMBOL>?tf=…&fee=…` (candles, volume, signal markers, current levels, the track
 * record and the backtest at a fee per side; a bad fee is a 400 page). What the member sees is
 * the entitlement rule's: an account that may call the paid endpoint now sees the current
 * levels and every signal (each view counted against the page-view budgets, 429 past them);
 * any other sees the price history and the signals that ended (track-record/ended-history.ts).
 */
import { Hono } from "hono";
import { entitlement, viewerOf } from "../../accounts/entitlement.ts";
import { countPageView, type PageViewVerdict } from "../../accounts/page-views.ts";
import { isWellFormedSymbol } from "../../market/symbols.ts";
import { normaliseTimeframe } from "../../signals/request.ts";
import { DEFAULT_FEE_PCT, parseFeePct } from "../../track-record/backtest.ts";
import type { ChartData } from "../../track-record/chart-data.ts";
import { listChartCoins } from "../../track-record/chart-data.ts";
import { endedHistoryOf } from "../../track-record/ended-history.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { type ChartAccess, chartPath, renderChartIndexPage, renderChartPage } from "../chart-page.ts";
import { methodNotAllowed, type PageKit, type Signed, type WebContext, type WebEnv } from "../page-kit.ts";
import { loadFeedStatus } from "../status-page.ts";

/** Routes of `/charts` and `/charts/:symbol`. */
export function chartRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock, config } = kit.deps;
  const app = new Hono<WebEnv>();
  const { perSessionPerMinute, perAccountPerDay } = config.pageViews;

  /** 429 when a page-view budget is used up, with when it refills. */
  function tooManyViews(c: WebContext, signed: Signed, verdict: Extract<PageViewVerdict, { ok: false }>): Response {
    const seconds = Math.max(1, Math.ceil(verdict.retryAfterMs / 1000));
    const budget =
      verdict.budget === "session"
        ? `${perSessionPerMinute} chart views a minute in one browser session`
        : `${perAccountPerDay} chart views a day (MYT) for one account`;
    const wait = seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
    return kit.page(
      c,
      429,
      renderMessagePage(
        signed.ctx,
        "Too many chart views",
        `Chart pages show the current signal at a person's pace: at most ${budget}. ` +
          `Try again in ${wait}. For more, use the API.`,
        { href: "/charts", text: "Back to the charts" },
      ),
      { "retry-after": String(seconds) },
    );
  }

  app.get("/charts", kit.session, async (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/charts");
    return kit.page(c, 200, renderChartIndexPage(signed.ctx, await listChartCoins(db)));
  });
  app.all("/charts", methodNotAllowed(kit, "GET"));

  // hono decodes the segment; a malformed escape stays as it is and fails the symbol check.
  app.get("/charts/:symbol{[^/]{1,40}}", kit.session, async (c) => {
    const rawSymbol = c.req.param("symbol");
    const symbol = rawSymbol.toUpperCase();
    const tf = normaliseTimeframe(c.req.query("tf"));
    const fee = parseFeePct(c.req.query("fee"));
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, chartPath(symbol, tf, fee.ok ? fee.feePct : DEFAULT_FEE_PCT));
    if (!fee.ok)
      return kit.page(
        c,
        400,
        renderMessagePage(signed.ctx, "Fee refused", fee.message, {
          href: chartPath(symbol, tf),
          text: `Open ${symbol} ${tf} at the default fee`,
        }),
      );
    // A fee between the allowed ones: the page of the nearest, at its own address.
    if (!fee.exact) return kit.seeOther(c, chartPath(symbol, tf, fee.feePct));
    const data = isWellFormedSymbol(symbol) ? await kit.chartData.get(symbol, tf) : null;
    if (data === null) {
      return kit.page(
        c,
        404,
        renderMessagePage(
          signed.ctx,
          "No such coin",
          `There is no chart for "${rawSymbol.slice(0, 20)}": no candles were ever received for it.`,
          { href: "/charts", text: "See the coins with charts" },
        ),
      );
    }
    if (!data.timeframes.includes(tf)) {
      return kit.page(
        c,
        404,
        renderMessagePage(
          signed.ctx,
          "No such timeframe",
          `${symbol} has no ${tf} candles; it has ${data.timeframes.join(", ")}.`,
          { href: chartPath(symbol, data.timeframes[0]!), text: `Open ${symbol} ${data.timeframes[0]}` },
        ),
      );
    }
    const now = clock();
    // The current signal only for an account that may call the paid endpoint now, at a person's pace.
    let shown: { data: ChartData; access: ChartAccess };
    if (entitlement(viewerOf(signed.summary, now), "chart_page").currentSignal) {
      const verdict = await countPageView(
        db,
        { sessionHash: signed.session.tokenHash, accountId: signed.session.accountId },
        config.pageViews,
        now,
      );
      if (!verdict.ok) return tooManyViews(c, signed, verdict);
      shown = { data, access: { current: true } };
    } else {
      const ended = endedHistoryOf(data, now);
      shown = { data: ended.data, access: { current: false, until: ended.until } };
    }
    const [status] = await loadFeedStatus(db, now, config.staleAfterMs, symbol);
    const backtest = kit.chartData.backtestAt(shown.data, fee.feePct);
    return kit.page(
      c,
      200,
      renderChartPage(
        signed.ctx,
        shown.data,
        backtest,
        { status: status ?? null, now, staleAfterMs: config.staleAfterMs },
        [kit.assets.url("lightweight-charts.js"), kit.assets.url("chart.js")],
        shown.access,
      ),
    );
  });
  app.all("/charts/:symbol{[^/]{1,40}}", methodNotAllowed(kit, "GET"));
  return app;
}
