/**
 * "Forgot password?": `/forgot-password` asks for a reset link by email and `/reset-password`
 * is where the link leads. Only when mail is configured (SMTP_URL); otherwise these paths do
 * not exist (404) and the operator's setup links remain the way back in.
 *
 * The request's answer is the same page whether or not an account uses the address and
 * whether or not its hourly budget allows another mail; the lookup and the mail happen after
 * the answer, so its timing says nothing either. Only a client address over its own budget
 * gets a different answer (429), which tells nothing about any account.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { errorSummary } from "../../logger.ts";
import { renderContinuePage, renderForgotPasswordPage, renderMessagePage, renderResetPasswordPage, renderResetRequestedPage } from "../auth-pages.ts";
import { CSRF_COOKIE, CSRF_FIELD, doubleSubmitMatches } from "../csrf.ts";
import { clientAddress } from "../http.ts";
import { isHashBusy, methodNotAllowed, type PageKit, type WebContext, type WebEnv } from "../page-kit.ts";
import { checkPasswordReset, createPasswordReset, redeemPasswordReset, RESET_LINK_TTL_MS } from "../../accounts/sign-in/password-resets.ts";
import { newPasswordProblem } from "../../accounts/sign-in/passwords.ts";
import { createResetMailer } from "../reset-mail.ts";
import { minutesText, reserveAttempt, retryAfter, sweepExpired, throttleKeys, type ThrottlePolicy } from "../../accounts/attempt-throttle.ts";

/** Reset mails per email and requests per client address, per hour. */
export const RESET_THROTTLE: ThrottlePolicy = Object.freeze({ windowMs: 3600_000, perAddress: 10, perEmail: 3, scope: "reset:" });
/** Holds a reset link's token between opening the link and posting the new password. */
const RESET_COOKIE = "pw_reset";

/** Routes of `/forgot-password` and `/reset-password` (none without SMTP_URL). */
export function passwordResetRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const app = new Hono<WebEnv>();
  if (config.mail === null) return app;
  const mailer = createResetMailer(config.mail);

  /** Looks the address up and mails a link, after the answer has gone (errors are only logged). */
  function mailLinkLater(email: string, now: number): void {
    void (async () => {
      const reset = await createPasswordReset(db, email, now);
      if (reset === null) return;
      // The token is in the link only: neither is logged.
      await mailer.send({ to: reset.email, link: `${config.publicBaseUrl}/reset-password?token=${reset.token}`, expiresAt: reset.expiresAt });
      logger.info({ accountId: reset.accountId }, "password reset mail sent");
    })().catch((err: unknown) => logger.error({ err: errorSummary(err) }, "password reset mail failed"));
  }

  app.get("/forgot-password", (c) => kit.page(c, 200, renderForgotPasswordPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c) })));

  app.post("/forgot-password", kit.form, async (c) => {
    const form = c.get("form");
    if (!doubleSubmitMatches(getCookie(c, CSRF_COOKIE), form.get(CSRF_FIELD))) return kit.refuse(c, kit.publicCtx);
    const email = (form.get("email") ?? "").trim();
    const csrfToken = kit.csrfCookie(c);
    if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
      return kit.page(c, 400, renderForgotPasswordPage(kit.publicCtx, { csrfToken, email: email.slice(0, 320), error: "Enter the email address of your account." }));
    }
    const now = clock();
    const keys = throttleKeys(clientAddress(kit.nodeRequest(c), config.trustProxy), email, RESET_THROTTLE.scope);
    // Every request counts (not only failures, as for sign-ins), reserved before anything else.
    const addressWait = await reserveAttempt(db, [{ key: keys.address, limit: RESET_THROTTLE.perAddress }], RESET_THROTTLE.windowMs, now);
    if (addressWait > 0) {
      return kit.page(c, 429, renderForgotPasswordPage(kit.publicCtx, { csrfToken, email, error: `Too many reset requests from your network. Try again in ${minutesText(addressWait)}.` }), retryAfter(addressWait));
    }
    // Over the email's budget the answer is the same page, and no mail goes out.
    const emailWait = await reserveAttempt(db, [{ key: keys.email, limit: RESET_THROTTLE.perEmail }], RESET_THROTTLE.windowMs, now);
    await sweepExpired(db, RESET_THROTTLE, now);
    if (emailWait === 0) mailLinkLater(email, now);
    return kit.page(c, 200, renderResetRequestedPage(kit.publicCtx, email));
  });
  app.all("/forgot-password", methodNotAllowed(kit, "GET, POST"));

  const linkGone = (c: WebContext) => {
    if (getCookie(c, RESET_COOKIE) !== undefined) kit.setCookie(c, RESET_COOKIE, "", 0);
    return kit.page(
      c,
      410,
      renderMessagePage(kit.publicCtx, "Link not valid", "This password reset link does not work any more: it was used already, is older than an hour, or a newer link replaced it. Ask for a new one.", {
        href: "/forgot-password",
        text: "Ask for a new link",
      }),
    );
  };

  app.get("/reset-password", async (c) => {
    const now = clock();
    const fromLink = c.req.query("token");
    if (fromLink !== undefined) {
      // Opening the link only looks (a mail scanner's preview does not use it up). The token moves
      // into a cookie and out of the address bar, the history and any later request line.
      if ((await checkPasswordReset(db, fromLink, now)) === null) return linkGone(c);
      kit.setCookie(c, RESET_COOKIE, fromLink, RESET_LINK_TTL_MS / 1000);
      // From a webmail (cross-site), the SameSite=Strict cookie would not ride on the redirect:
      // continue through a same-site reload instead (see renderContinuePage).
      if (c.req.header("sec-fetch-site") === "cross-site") return kit.page(c, 200, renderContinuePage(kit.publicCtx, "/reset-password"));
      return kit.seeOther(c, "/reset-password");
    }
    const target = await checkPasswordReset(db, getCookie(c, RESET_COOKIE) ?? "", now);
    if (target === null) return linkGone(c);
    return kit.page(c, 200, renderResetPasswordPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c), email: target.email }));
  });

  app.post("/reset-password", kit.form, async (c) => {
    const form = c.get("form");
    if (!doubleSubmitMatches(getCookie(c, CSRF_COOKIE), form.get(CSRF_FIELD))) return kit.refuse(c, kit.publicCtx);
    const token = getCookie(c, RESET_COOKIE) ?? "";
    const password = form.get("password") ?? "";
    const now = clock();
    const target = await checkPasswordReset(db, token, now);
    if (target === null) return linkGone(c);
    const again = (error: string) => kit.page(c, 400, renderResetPasswordPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c), email: target.email, error }));
    const problem = newPasswordProblem(password, form.get("confirm") ?? "");
    if (problem !== null) return again(problem);
    const accountId = await kit.withHashPlace(c, clientAddress(kit.nodeRequest(c), config.trustProxy), (hash) => redeemPasswordReset(db, token, password, now, hash));
    if (isHashBusy(accountId)) return kit.page(c, accountId.status, renderResetPasswordPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c), email: target.email, error: accountId.message }), accountId.headers);
    if (accountId === null) return linkGone(c);
    logger.info({ accountId }, "member password reset through an emailed link; every session ended");
    kit.setCookie(c, RESET_COOKIE, "", 0);
    kit.clearSessionCookie(c);
    return kit.seeOther(c, "/signin?password-reset");
  });
  app.all("/reset-password", methodNotAllowed(kit, "GET, POST"));
  return app;
}
