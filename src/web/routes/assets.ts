/** `/assets/<name>`: the pages' stylesheet, scripts and icon (see ../assets.ts); the icon also at /favicon.ico. */
import { Hono } from "hono";
import type { PageKit, WebEnv } from "../page-kit.ts";

/** Route of `/assets/:name`; an unknown name is the site's 404. */
export function assetRoutes(kit: PageKit): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  app.all("/assets/:name", (c) => kit.assets.serve(c, c.req.param("name")) ?? c.notFound());
  // Where browsers look for an icon on pages that do not link one (the /docs page).
  app.all("/favicon.ico", (c) => kit.assets.serve(c, "favicon.svg")!);
  return app;
}
