/**
 * Self-service sign-up: `/signup` makes an account on the `free` plan with its password and
 * signs it in. Like sign-in it checks the double-submit CSRF token (there is no session yet)
 * and reserves an attempt on the sign-up budget of the address and the email before the
 * password is hashed, which bounds how many accounts one client can create.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { CSRF_COOKIE, CSRF_FIELD, doubleSubmitMatches } from "../csrf.ts";
import { clientAddress } from "../http.ts";
import { isHashBusy, methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { createSession } from "../sessions.ts";
import { signUp } from "../signup.ts";
import { renderSignUpPage } from "../signup-page.ts";
import { minutesText, reserveOnBoth, retryAfter, sweepExpired, throttleKeys, type ThrottlePolicy } from "../throttle.ts";

/** Sign-ups per client address and per email, per hour (each attempt counts, reserved before the hash). */
export const SIGN_UP_THROTTLE: ThrottlePolicy = Object.freeze({ windowMs: 3600_000, perAddress: 10, perEmail: 3, scope: "signup:" });

/** Routes of `/signup`. */
export function signUpRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const app = new Hono<WebEnv>();

  app.get("/signup", async (c) => {
    if ((await kit.signedIn(c)) !== null) return kit.seeOther(c, "/account");
    return kit.page(c, 200, renderSignUpPage(kit.publicCtx, { csrfToken: kit.csrfCookie(c) }));
  });

  app.post("/signup", kit.form, async (c) => {
    const form = c.get("form");
    if (!doubleSubmitMatches(getCookie(c, CSRF_COOKIE), form.get(CSRF_FIELD))) return kit.refuse(c, kit.publicCtx);
    const email = (form.get("email") ?? "").trim().slice(0, 320);
    const csrfToken = kit.csrfCookie(c);
    const again = (status: number, error: string, headers: Record<string, string> = {}) =>
      kit.page(c, status, renderSignUpPage(kit.publicCtx, { csrfToken, email, error }), headers);
    const now = clock();
    const address = clientAddress(kit.nodeRequest(c), config.trustProxy);
    const outcome = await kit.withHashPlace(c, address, async (hash) => {
      const waitMs = await reserveOnBoth(db, throttleKeys(address, email, SIGN_UP_THROTTLE.scope), SIGN_UP_THROTTLE, now);
      if (waitMs > 0) return { ok: false, waitMs } as const;
      await sweepExpired(db, SIGN_UP_THROTTLE, now);
      return signUp(db, { email, password: form.get("password") ?? "", confirm: form.get("confirm") ?? "" }, hash);
    });
    if (isHashBusy(outcome)) return again(outcome.status, outcome.message, outcome.headers);
    if (!outcome.ok && "waitMs" in outcome) return again(429, `Too many sign-ups from your network. Try again in ${minutesText(outcome.waitMs)}.`, retryAfter(outcome.waitMs));
    const result = outcome;
    if (!result.ok) return again(result.status, result.message);
    const { token } = await createSession(db, result.accountId, now, config.sessionTtlMs);
    logger.info({ accountId: result.accountId }, "member signed up");
    kit.setSessionCookie(c, token);
    return kit.seeOther(c, "/account");
  });
  app.all("/signup", methodNotAllowed(kit, "GET, POST"));
  return app;
}
