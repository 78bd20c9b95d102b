/**
 * The public `/track-record` page: no sign-in and no Token; every coin and timeframe's backtest
 * at the stated default fee, served from the chart data cache (recomputed per candle close or
 * signal event, not per view). A public page shows no current signal to anyone (the
 * entitlement rule): each series counts the signals that ended (web/ended-history.ts).
 */
import { Hono } from "hono";
import { endedHistoryOf } from "../ended-history.ts";
import { renderTrackRecordPage } from "../track-record-page.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";

/** Routes of `/track-record`. */
export function trackRecordRoutes(kit: PageKit): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  app.get("/track-record", kit.session, async (c) => {
    const signed = c.get("signed");
    const now = kit.deps.clock();
    // A public page is the same for everyone, so it never shows a current signal (entitlement.ts,
    // `track_record`): every series counts only the signals that ended.
    const series = (await kit.chartData.all()).map((data) => {
      const shown = endedHistoryOf(data, now);
      return { data: shown.data, backtest: shown.data.backtest, until: shown.until };
    });
    return kit.page(c, 200, renderTrackRecordPage(signed?.ctx ?? kit.publicCtx, series));
  });
  app.all("/track-record", methodNotAllowed(kit, "GET"));
  return app;
}
