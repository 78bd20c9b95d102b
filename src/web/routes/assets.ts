/** `/assets/<name>`: the pages' stylesheet and scripts (see ../assets.ts). */
import { Hono } from "hono";
import type { PageKit, WebEnv } from "../page-kit.ts";

/** Route of `/assets/:name`; an unknown name is the site's 404. */
export function assetRoutes(kit: PageKit): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  app.all("/assets/:name", (c) => kit.assets.serve(c, c.req.param("name")) ?? c.notFound());
  return app;
}
