/**
 * The charts a signed-in member may open: `/charts` (the coins with candles) and
 * `/charts/<SYMBOL>?tf=…&fee=…` (candles, volume, signal markers, current levels, the track
 * record and the backtest at a fee per side; a bad fee is a 400 page).
 */
import { Hono } from "hono";
import { isWellFormedSymbol } from "../../market/symbols.ts";
import { normaliseTimeframe } from "../../signals/request.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { DEFAULT_FEE_PCT, parseFeePct } from "../backtest.ts";
import { listChartCoins } from "../chart-data.ts";
import { loadFeedStatus } from "../status-page.ts";
import { chartPath, renderChartIndexPage, renderChartPage } from "../chart-page.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";

/** Routes of `/charts` and `/charts/:symbol`. */
export function chartRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock, config } = kit.deps;
  const app = new Hono<WebEnv>();

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
    if (!fee.ok) return kit.page(c, 400, renderMessagePage(signed.ctx, "Fee refused", fee.message, { href: chartPath(symbol, tf), text: `Open ${symbol} ${tf} at the default fee` }));
    const data = isWellFormedSymbol(symbol) ? await kit.chartData.get(symbol, tf) : null;
    if (data === null) {
      return kit.page(c, 404, renderMessagePage(signed.ctx, "No such coin", `There is no chart for "${rawSymbol.slice(0, 20)}": no candles were ever received for it.`, { href: "/charts", text: "See the coins with charts" }));
    }
    if (!data.timeframes.includes(tf)) {
      return kit.page(c, 404, renderMessagePage(signed.ctx, "No such timeframe", `${symbol} has no ${tf} candles; it has ${data.timeframes.join(", ")}.`, { href: chartPath(symbol, data.timeframes[0]!), text: `Open ${symbol} ${data.timeframes[0]}` }));
    }
    const now = clock();
    const [status] = await loadFeedStatus(db, now, config.staleAfterMs, symbol);
    const backtest = kit.chartData.backtestAt(data, fee.feePct);
    return kit.page(c, 200, renderChartPage(signed.ctx, data, backtest, { status: status ?? null, now, staleAfterMs: config.staleAfterMs }, [kit.assets.url("lightweight-charts.js"), kit.assets.url("chart.js")]));
  });
  app.all("/charts/:symbol{[^/]{1,40}}", methodNotAllowed(kit, "GET"));
  return app;
}
