/**
 * The public `/status` page: each coin's feed state and the free datasets' newest rows (no sign-in; a signed-in member
 * gets their navigation).
 */
import { Hono } from "hono";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { loadContextDataStatus, loadFeedStatus, renderStatusPage } from "../status-page.ts";

/** Routes of `/status`. */
export function statusRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock, config } = kit.deps;
  const app = new Hono<WebEnv>();
  app.get("/status", kit.session, async (c) => {
    const now = clock();
    const [coins, context] = await Promise.all([
      loadFeedStatus(db, now, config.staleAfterMs),
      loadContextDataStatus(db),
    ]);
    return kit.page(c, 200, renderStatusPage(c.get("signed")?.ctx ?? kit.publicCtx, coins, now, context));
  });
  app.all("/status", methodNotAllowed(kit, "GET"));
  return app;
}
