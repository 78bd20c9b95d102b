/**
 * The public `/track-record` page: no sign-in and no Token; the live record (only signals the
 * service issued live, after stated costs), its confidence, and each day's head of the signal
 * log, recomputed per stored change, not per view. A public page shows no current signal to
 * anyone (the entitlement rule): each series stands as it was before the signal in force 24 hours
 * ago. `/track-record/log.jsonl` is the whole signal log, for signed-in members only (a web
 * download, never an API answer).
 */
import { Hono } from "hono";
import { mytDay } from "../../clock.ts";
import { errorSummary } from "../../logger.ts";
import { chainLogPages, chainLogStream, DailyHeadsCache } from "../../track-record/event-log.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { renderTrackRecordPage } from "../track-record-page.ts";

/** Routes of `/track-record`. */
export function trackRecordRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock, logger } = kit.deps;
  const app = new Hono<WebEnv>();
  const heads = new DailyHeadsCache(db);
  app.get("/track-record", kit.session, async (c) => {
    const signed = c.get("signed");
    const now = clock();
    // A public page is the same for everyone, so it never shows a current signal (entitlement.ts,
    // `track_record`): every series stands as it was before the signal in force 24 hours ago.
    const [view, days] = await Promise.all([kit.liveRecord.get(now), heads.get()]);
    return kit.page(c, 200, renderTrackRecordPage(signed?.ctx ?? kit.publicCtx, view, days));
  });
  app.all("/track-record", methodNotAllowed(kit, "GET"));

  app.get("/track-record/log.jsonl", kit.session, (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/track-record/log.jsonl");
    const failed = (err: unknown) => logger.error({ err: errorSummary(err) }, "signal log download broke off");
    return c.body(chainLogStream(chainLogPages(db), failed), 200, {
      "content-type": "application/jsonl; charset=utf-8",
      "content-disposition": `attachment; filename="signal-log-${mytDay(clock())}.jsonl"`,
      "cache-control": "no-store",
    });
  });
  app.all("/track-record/log.jsonl", methodNotAllowed(kit, "GET"));
  return app;
}
