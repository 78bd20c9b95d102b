/**
 * The public `/track-record` page: no sign-in and no Token; every coin and timeframe's backtest
 * at the stated default fee, served from the chart data cache (recomputed per candle close or
 * signal event, not per view).
 */
import { Hono } from "hono";
import { renderTrackRecordPage } from "../track-record-page.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";

/** Routes of `/track-record`. */
export function trackRecordRoutes(kit: PageKit): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  app.get("/track-record", kit.session, async (c) => {
    const series = await kit.chartData.all();
    const ctx = c.get("signed")?.ctx ?? kit.publicCtx;
    return kit.page(c, 200, renderTrackRecordPage(ctx, series.map((data) => ({ data, backtest: data.backtest }))));
  });
  app.all("/track-record", methodNotAllowed(kit, "GET"));
  return app;
}
