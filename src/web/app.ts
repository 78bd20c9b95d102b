/**
 * The web pages as one hono app, mounted as the public listener's fallback (after the REST
 * routes). Every page is server-rendered; every POST passes the Origin check, the form checks
 * and a CSRF token check before it changes anything; every signed-in page reads the account
 * from the session only. Each page's routes live in routes/, built over the shared page kit.
 */

import { getRequestListener } from "@hono/node-server";
import { Hono } from "hono";
import { isDatabaseUnavailable } from "../db/connection-errors.ts";
import { errorSummary } from "../logger.ts";
import { renderMessagePage } from "./auth-pages.ts";
import type { WebRequest, WebResponse } from "./http.ts";
import { createPageKit, pageSecurityHeaders, type WebDeps, type WebEnv } from "./page-kit.ts";
import { accountRoutes } from "./routes/account.ts";
import { accountSecurityRoutes } from "./routes/account-security.ts";
import { assetRoutes } from "./routes/assets.ts";
import { chartRoutes } from "./routes/charts.ts";
import { emailVerificationRoutes } from "./routes/email-verification.ts";
import { forgotPasswordRoutes } from "./routes/forgot-password.ts";
import { passwordLinkRoutes } from "./routes/password-links.ts";
import { paymentRoutes } from "./routes/payments.ts";
import { publicPageRoutes } from "./routes/public-pages.ts";
import { signInRoutes } from "./routes/sign-in.ts";
import { signUpRoutes } from "./routes/sign-up.ts";
import { statusRoutes } from "./routes/status.ts";
import { telegramRoutes } from "./routes/telegram.ts";
import { trackRecordRoutes } from "./routes/track-record.ts";
import { watchRoutes } from "./routes/watch.ts";

/** How paths that are not pages are answered (the API's JSON errors, owned by the server). */
export interface WebFallbacks {
  /** The answer for a path no route takes. */
  notFound(): Response;
  /** The answer for a request Node accepted but that cannot be a URL (a malformed Host). */
  badRequest(): Response;
}

/** Builds the web app over its dependencies (assets are read once, here). */
export function createWebApp(deps: WebDeps, fallbacks: Pick<WebFallbacks, "notFound">): Hono<WebEnv> {
  const kit = createPageKit(deps);
  const app = new Hono<WebEnv>();
  app.use(pageSecurityHeaders(deps.config));
  for (const routes of [
    assetRoutes,
    publicPageRoutes,
    signInRoutes,
    signUpRoutes,
    emailVerificationRoutes,
    passwordLinkRoutes,
    forgotPasswordRoutes,
    accountRoutes,
    accountSecurityRoutes,
    telegramRoutes,
    paymentRoutes,
    chartRoutes,
    watchRoutes,
    trackRecordRoutes,
    statusRoutes,
  ])
    app.route("/", routes(kit));
  app.notFound(() => fallbacks.notFound());
  app.onError((err, c) => {
    deps.logger.error({ err: errorSummary(err), path: c.req.path }, "web page failed");
    // The database out of reach is not a broken page: say so, and when to try again. A form's
    // change may have committed before the link went silent (the outcome is unknown), so only a
    // read is told that nothing changed.
    if (isDatabaseUnavailable(err)) {
      const read = c.req.method === "GET" || c.req.method === "HEAD";
      return kit.page(
        c,
        503,
        renderMessagePage(
          kit.publicCtx,
          "Temporarily unavailable",
          read
            ? "This page needs data we cannot reach right now. Nothing was changed. Try again in a moment."
            : "We lost the connection to our data while saving, so your change may or may not have been " +
                "saved. Reload the page in a moment to check before trying again.",
        ),
        { "retry-after": "5", "x-error-code": "unavailable" },
      );
    }
    return kit.page(
      c,
      500,
      renderMessagePage(kit.publicCtx, "Something went wrong", "The page could not be built. Try again in a moment."),
    );
  });
  return app;
}

/** The web app as a Node request handler for the Connect adapter's fallback. */
export function createWebHandler(
  deps: WebDeps,
  fallbacks: WebFallbacks,
): (req: WebRequest, res: WebResponse) => Promise<void> {
  const app = createWebApp(deps, fallbacks);
  // The default overrideGlobalObjects: hono's bodyLimit builds a `new Request` from the adapter's
  // lightweight request, which only the adapter's Request subclass accepts (a chunked form was a 500).
  const listener = getRequestListener(app.fetch, { errorHandler: () => fallbacks.badRequest() });
  return (req, res) => listener(req as never, res as never);
}
