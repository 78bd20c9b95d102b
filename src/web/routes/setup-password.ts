/**
 * `/setup-password?token=…`: the one-time link an operator sends so a member can choose a
 * password. Opening the page only checks the link; posting the form uses it up.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { renderMessagePage, renderSetupPasswordPage } from "../auth-pages.ts";
import { CSRF_COOKIE, CSRF_FIELD, doubleSubmitMatches } from "../csrf.ts";
import { checkSetupToken, redeemSetupToken } from "../../accounts/sign-in/credentials.ts";
import { clientAddress } from "../http.ts";
import { isHashBusy, methodNotAllowed, type PageKit, type WebContext, type WebEnv } from "../page-kit.ts";
import { newPasswordProblem } from "../../accounts/sign-in/passwords.ts";

/** Routes of `/setup-password`. */
export function setupPasswordRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const app = new Hono<WebEnv>();
  const invalidLink = (c: WebContext) =>
    kit.page(
      c,
      404,
      renderMessagePage(kit.publicCtx, "Link not valid", "This password link is not valid: it was used already, has expired, or a newer link replaced it. Ask your operator for a new one.", {
        href: "/signin",
        text: "Go to sign in",
      }),
    );

  app.get("/setup-password", async (c) => {
    const token = c.req.query("token") ?? "";
    // Only looks: opening (or a link preview fetching) the page does not use the link up.
    const target = await checkSetupToken(db, token, clock());
    if (target === null) return invalidLink(c);
    const csrfToken = kit.csrfCookie(c);
    return kit.page(c, 200, renderSetupPasswordPage(kit.publicCtx, { csrfToken, token, email: target.email }));
  });

  app.post("/setup-password", kit.form, async (c) => {
    const form = c.get("form");
    if (!doubleSubmitMatches(getCookie(c, CSRF_COOKIE), form.get(CSRF_FIELD))) return kit.refuse(c, kit.publicCtx);
    const token = form.get("token") ?? "";
    const password = form.get("password") ?? "";
    const now = clock();
    const target = await checkSetupToken(db, token, now);
    if (target === null) return invalidLink(c);
    const csrfToken = kit.csrfCookie(c);
    const again = (error: string) => kit.page(c, 400, renderSetupPasswordPage(kit.publicCtx, { csrfToken, token, email: target.email, error }));
    const problem = newPasswordProblem(password, form.get("confirm") ?? "");
    if (problem !== null) return again(problem);
    const accountId = await kit.withHashPlace(c, clientAddress(kit.nodeRequest(c), config.trustProxy), (hash) => redeemSetupToken(db, token, password, now, hash));
    if (isHashBusy(accountId)) return kit.page(c, accountId.status, renderSetupPasswordPage(kit.publicCtx, { csrfToken, token, email: target.email, error: accountId.message }), accountId.headers);
    if (accountId === null) return invalidLink(c);
    logger.info({ accountId }, "member password set through a setup link");
    kit.clearSessionCookie(c);
    return kit.seeOther(c, "/signin?password-set");
  });
  app.all("/setup-password", methodNotAllowed(kit, "GET, POST"));
  return app;
}
