/**
 * "Forgot password?": `/forgot-password` asks for a reset link by email; the link leads to
 * `/reset-password` (routes/password-links.ts). Only when mail is configured (SMTP_URL);
 * otherwise these paths do not exist (404) and the operator's setup links remain the way back in.
 *
 * The request's answer is the same page whether or not an account uses the address and
 * whether or not its hourly budget allows another mail; the lookup and the mail happen after
 * the answer, so its timing says nothing either. Only a client address over its own budget
 * gets a different answer (429), which tells nothing about any account.
 */
import { Hono } from "hono";
import { reserveAttempt, type ThrottlePolicy, throttleKeys } from "../../accounts/attempt-throttle.ts";
import { createResetLinkFor } from "../../accounts/sign-in/password-links.ts";
import { errorSummary } from "../../logger.ts";
import { reserveOrRefuse } from "../attempt-refusals.ts";
import { renderForgotPasswordPage, renderResetRequestedPage } from "../auth-pages.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { createResetMailer } from "../reset-mail.ts";

/** Reset mails per email and requests per client address, per hour. */
export const RESET_THROTTLE: ThrottlePolicy = Object.freeze({
  windowMs: 3600_000,
  perAddress: 10,
  perEmail: 3,
  scope: "reset:",
});

/** Routes of `/forgot-password` (none without SMTP_URL). */
export function forgotPasswordRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const app = new Hono<WebEnv>();
  if (config.mail === null) return app;
  const mailer = createResetMailer(config.mail);

  /** Looks the address up and mails a link, after the answer has gone (errors are only logged). */
  function mailLinkLater(email: string, now: number): void {
    void (async () => {
      const reset = await createResetLinkFor(db, email, now);
      if (reset === null) return;
      // The token is in the link only: neither is logged.
      await mailer.send({
        to: reset.email,
        link: `${config.publicBaseUrl}/reset-password?token=${reset.token}`,
        expiresAt: reset.expiresAt,
      });
      logger.info({ accountId: reset.accountId }, "password reset mail sent");
    })().catch((err: unknown) => logger.error({ err: errorSummary(err) }, "password reset mail failed"));
  }

  app.get("/forgot-password", (c) =>
    kit.page(c, 200, renderForgotPasswordPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c) })),
  );

  app.post("/forgot-password", kit.anonymousForm, async (c) => {
    const email = (c.get("form").get("email") ?? "").trim();
    const again = (status: number, error: string | null, headers: Record<string, string> = {}) =>
      kit.page(
        c,
        status,
        renderForgotPasswordPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c), email: email.slice(0, 320), error }),
        headers,
      );
    if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email))
      return again(400, "Enter the email address of your account.");
    const now = clock();
    const keys = throttleKeys(clientAddress(kit.nodeRequest(c), config.trustProxy), email, RESET_THROTTLE.scope);
    // Every request counts (not only failures, as for sign-ins), reserved before anything else.
    const refused = await reserveOrRefuse(
      db,
      [{ key: keys.address, limit: RESET_THROTTLE.perAddress }],
      RESET_THROTTLE,
      now,
      "Too many reset requests from your network.",
    );
    if (refused !== null) return again(refused.status, refused.message, refused.headers);
    // Over the email's budget the answer is the same page, and no mail goes out.
    const emailWait = await reserveAttempt(
      db,
      [{ key: keys.email, limit: RESET_THROTTLE.perEmail }],
      RESET_THROTTLE.windowMs,
      now,
    );
    if (emailWait === 0) mailLinkLater(email, now);
    return kit.page(c, 200, renderResetRequestedPage(kit.publicCtx, email));
  });
  app.all("/forgot-password", methodNotAllowed(kit, "GET, POST"));
  return app;
}
