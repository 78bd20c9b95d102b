/** The public `/status` page: each coin's feed state as the service sees it (no sign-in). */
import { Hono } from "hono";
import { loadFeedStatus, renderStatusPage } from "../status-page.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";

/** Routes of `/status`. */
export function statusRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock, config } = kit.deps;
  const app = new Hono<WebEnv>();
  app.get("/status", async (c) => {
    const now = clock();
    return kit.page(c, 200, renderStatusPage(kit.publicCtx, await loadFeedStatus(db, now, config.staleAfterMs), now));
  });
  app.all("/status", methodNotAllowed(kit, "GET"));
  return app;
}
