/**
 * The charts a signed-in member may open: `/charts` (the coins with candles) and
 * `/charts/<SYMBOL>?tf=…` (candles, signal markers and current levels).
 */
import { Hono } from "hono";
import { isWellFormedSymbol } from "../../market/symbols.ts";
import { normaliseTimeframe } from "../../signals/request.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { listChartCoins, loadChartData } from "../chart-data.ts";
import { chartPath, renderChartIndexPage, renderChartPage } from "../chart-page.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";

/** Routes of `/charts` and `/charts/:symbol`. */
export function chartRoutes(kit: PageKit): Hono<WebEnv> {
  const { db } = kit.deps;
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
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, chartPath(symbol, tf));
    const data = isWellFormedSymbol(symbol) ? await loadChartData(db, symbol, tf) : null;
    if (data === null) {
      return kit.page(c, 404, renderMessagePage(signed.ctx, "No such coin", `There is no chart for "${rawSymbol.slice(0, 20)}": no candles were ever received for it.`, { href: "/charts", text: "See the coins with charts" }));
    }
    if (!data.timeframes.includes(tf)) {
      return kit.page(c, 404, renderMessagePage(signed.ctx, "No such timeframe", `${symbol} has no ${tf} candles; it has ${data.timeframes.join(", ")}.`, { href: chartPath(symbol, data.timeframes[0]!), text: `Open ${symbol} ${data.timeframes[0]}` }));
    }
    return kit.page(c, 200, renderChartPage(signed.ctx, data, [kit.assets.url("lightweight-charts.js"), kit.assets.url("chart.js")]));
  });
  app.all("/charts/:symbol{[^/]{1,40}}", methodNotAllowed(kit, "GET"));
  return app;
}
