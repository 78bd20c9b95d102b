/**
 * Confirming a sign-up's email: `/verify-email` is where the mailed link
 * leads (opening it only shows a button, so a mail scanner's preview does not use it) and
 * `/account/verify-email` mails a new link to a signed-in, unconfirmed member, within a budget.
 */
import { Hono } from "hono";
import { addressAndEmailBudgets, type ThrottlePolicy, throttleKeys } from "../../accounts/attempt-throttle.ts";
import {
  checkEmailVerification,
  createEmailVerification,
  redeemEmailVerification,
} from "../../accounts/sign-in/email-verification.ts";
import { errorSummary } from "../../logger.ts";
import { reserveOrRefuse } from "../attempt-refusals.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type WebContext, type WebEnv } from "../page-kit.ts";
import { composeVerifyMail, createResetMailer } from "../reset-mail.ts";
import { refusalPage } from "../responses.ts";
import { renderVerifyEmailPage } from "../signup-page.ts";

/** New confirmation links per account and per client address, per hour. */
export const VERIFY_THROTTLE: ThrottlePolicy = Object.freeze({
  windowMs: 3600_000,
  perAddress: 10,
  perEmail: 3,
  scope: "verify:",
});

/**
 * Routes of `/verify-email` and `/account/verify-email` (none without SMTP_URL: sign-ups are then confirmed at once).
 */
export function emailVerificationRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const app = new Hono<WebEnv>();
  if (config.mail === null) return app;
  const mailer = createResetMailer(config.mail);

  const linkGone = (c: WebContext) =>
    kit.page(
      c,
      410,
      renderMessagePage(
        kit.publicCtx,
        "Link not valid",
        "This confirmation link does not work any more: it was used already, is older " +
          "than a day, or a newer link replaced it. Sign in and ask for a new one.",
        { href: "/signin", text: "Sign in" },
      ),
    );

  app.get("/verify-email", async (c) => {
    const token = c.req.query("token") ?? "";
    const target = await checkEmailVerification(db, token, clock());
    if (target === null) return linkGone(c);
    return kit.page(
      c,
      200,
      renderVerifyEmailPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c), token, email: target.email }),
    );
  });

  app.post("/verify-email", kit.anonymousForm, async (c) => {
    const form = c.get("form");
    const accountId = await redeemEmailVerification(db, form.get("token") ?? "", clock());
    if (accountId === null) return linkGone(c);
    logger.info({ accountId }, "member confirmed their email address");
    return kit.seeOther(c, "/signin?email-verified");
  });
  app.all("/verify-email", methodNotAllowed(kit, "GET, POST"));

  app.post("/account/verify-email", kit.memberForm, async (c) => {
    const signed = c.get("signed")!;
    if (signed.summary.emailVerified) return kit.seeOther(c, "/account");
    const now = clock();
    const keys = throttleKeys(
      clientAddress(kit.nodeRequest(c), config.trustProxy),
      `account-${signed.session.accountId}`,
      VERIFY_THROTTLE.scope,
    );
    const refused = await reserveOrRefuse(
      db,
      addressAndEmailBudgets(keys, VERIFY_THROTTLE),
      VERIFY_THROTTLE,
      now,
      `${VERIFY_THROTTLE.perEmail} links can be mailed in an hour.`,
    );
    if (refused !== null)
      return refusalPage(c, signed.ctx, "Too many links", refused, { href: "/account", text: "Back to your account" });
    const link = await createEmailVerification(db, signed.session.accountId, now);
    if (link !== null) {
      void mailer
        .sendComposed(
          link.email,
          composeVerifyMail({
            to: link.email,
            link: `${config.publicBaseUrl}/verify-email?token=${link.token}`,
            expiresAt: link.expiresAt,
          }),
        )
        .then(() => logger.info({ accountId: signed.session.accountId }, "confirmation link mailed again"))
        .catch((err: unknown) => logger.error({ err: errorSummary(err) }, "confirmation mail failed"));
    }
    return kit.seeOther(c, "/account?verify-sent");
  });
  app.all("/account/verify-email", methodNotAllowed(kit, "POST"));
  return app;
}
