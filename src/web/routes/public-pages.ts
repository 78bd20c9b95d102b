/**
 * The public pages that explain and sell the service: `/` (landing), `/pricing` and
 * `/getting-started`. No sign-in needed; a signed-in member sees the same content with their
 * navigation. The landing page shows no current signal to anyone (the entitlement rule's
 * public surfaces): its example comes from an ended signal, its figures from the public live
 * record (real data only).
 */
import { Hono } from "hono";
import { exampleAnswer, headlineOf } from "../../track-record/public-showcase.ts";
import { renderGettingStartedPage } from "../getting-started-page.ts";
import { renderLandingPage } from "../landing-page.ts";
import { methodNotAllowed, type PageKit, type WebContext, type WebEnv } from "../page-kit.ts";
import { renderPricingPage } from "../pricing-page.ts";

/** Routes of `/`, `/pricing` and `/getting-started`. */
export function publicPageRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock, config } = kit.deps;
  const app = new Hono<WebEnv>();
  const ctxOf = (c: WebContext) => c.get("signed")?.ctx ?? kit.publicCtx;

  app.get("/", kit.session, async (c) => {
    const now = clock();
    const view = {
      example: await exampleAnswer(db, now),
      headline: headlineOf(await kit.liveRecord.get(now)),
      offer: await kit.offer(),
    };
    return kit.page(c, 200, renderLandingPage(ctxOf(c), view));
  });
  app.all("/", methodNotAllowed(kit, "GET"));

  app.get("/pricing", kit.session, async (c) => kit.page(c, 200, renderPricingPage(ctxOf(c), await kit.offer())));
  app.all("/pricing", methodNotAllowed(kit, "GET"));

  app.get("/getting-started", kit.session, (c) =>
    kit.page(c, 200, renderGettingStartedPage(ctxOf(c), config.publicBaseUrl)),
  );
  app.all("/getting-started", methodNotAllowed(kit, "GET"));
  return app;
}
