/**
 * Self-service sign-up: `/signup` makes an account on the `free` plan with its password. Like
 * sign-in it checks the double-submit CSRF token (there is no session yet) and reserves an
 * attempt on the sign-up budget of the address and the email before the password is hashed,
 * which bounds how many accounts one client can create.
 *
 * The answer is the same page, status and work whether or not the email has an account:
 * with mail configured, a new account gets a confirmation link and an
 * existing one a note that it exists, both mailed after the answer; nobody is signed in.
 */
import { Hono } from "hono";
import { addressAndEmailBudgets, type ThrottlePolicy, throttleKeys } from "../../accounts/attempt-throttle.ts";
import { createEmailVerification } from "../../accounts/sign-in/email-verification.ts";
import { signUp } from "../../accounts/sign-in/sign-up.ts";
import { errorSummary } from "../../logger.ts";
import { reserveOrRefuse } from "../attempt-refusals.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { composeAlreadyMemberMail, composeVerifyMail, createResetMailer } from "../reset-mail.ts";
import { isRefusal } from "../responses.ts";
import { renderSignUpPage, renderSignUpSentPage } from "../signup-page.ts";

/** Sign-ups per client address and per email, per hour (each attempt counts, reserved before the hash). */
export const SIGN_UP_THROTTLE: ThrottlePolicy = Object.freeze({
  windowMs: 3600_000,
  perAddress: 10,
  perEmail: 3,
  scope: "signup:",
});

/** Routes of `/signup`. */
export function signUpRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const mailer = config.mail ? createResetMailer(config.mail) : null;
  const app = new Hono<WebEnv>();

  /** Mails the confirmation link, or the note that the account exists, after the answer (errors only logged). */
  function mailLater(email: string, created: number | null, now: number): void {
    if (mailer === null) return;
    void (async () => {
      if (created === null) {
        await mailer.sendComposed(
          email,
          composeAlreadyMemberMail({
            signIn: `${config.publicBaseUrl}/signin`,
            forgot: `${config.publicBaseUrl}/forgot-password`,
          }),
        );
        logger.info("sign-up with an address that has an account: told the mailbox");
        return;
      }
      const link = await createEmailVerification(db, created, now);
      if (link === null) return;
      // The token is in the link only: neither is logged.
      await mailer.sendComposed(
        link.email,
        composeVerifyMail({
          to: link.email,
          link: `${config.publicBaseUrl}/verify-email?token=${link.token}`,
          expiresAt: link.expiresAt,
        }),
      );
      logger.info({ accountId: created }, "member signed up; confirmation link mailed");
    })().catch((err: unknown) => logger.error({ err: errorSummary(err) }, "sign-up mail failed"));
  }

  app.get("/signup", async (c) => {
    if ((await kit.signedIn(c)) !== null) return kit.seeOther(c, "/account");
    return kit.page(c, 200, renderSignUpPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c) }));
  });

  app.post("/signup", kit.anonymousForm, async (c) => {
    const form = c.get("form");
    const email = (form.get("email") ?? "").trim().slice(0, 320);
    const csrfToken = kit.csrfCookie(c);
    const again = (status: number, error: string, headers: Record<string, string> = {}) =>
      kit.page(c, status, renderSignUpPage(kit.publicCtx, { csrfToken, email, error }), headers);
    const now = clock();
    const address = clientAddress(kit.nodeRequest(c), config.trustProxy);
    const outcome = await kit.withHashPlace(c, address, async (hash) => {
      const budgets = addressAndEmailBudgets(throttleKeys(address, email, SIGN_UP_THROTTLE.scope), SIGN_UP_THROTTLE);
      const refused = await reserveOrRefuse(db, budgets, SIGN_UP_THROTTLE, now, "Too many sign-ups from your network.");
      if (refused !== null) return refused;
      // Without mail no link can prove the address: the operator chose that (docs/decisions.md).
      return signUp(
        db,
        { email, password: form.get("password") ?? "", confirm: form.get("confirm") ?? "", verified: mailer === null },
        config.passwordHashCost,
        hash,
      );
    });
    if (isRefusal(outcome)) return again(outcome.status, outcome.message, outcome.headers);
    if (!outcome.ok) return again(outcome.status, outcome.message);
    mailLater(email, outcome.created, now);
    return kit.page(c, 200, renderSignUpSentPage(kit.publicCtx, { email, byMail: mailer !== null }));
  });
  app.all("/signup", methodNotAllowed(kit, "GET, POST"));
  return app;
}
