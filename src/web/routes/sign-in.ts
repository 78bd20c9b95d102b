/**
 * Signing in and out: `/` (to the account or the sign-in form), `/signin` and `/signout`.
 * Sign-in checks the double-submit CSRF token (there is no session yet) and the shared failed
 * sign-in budget before it looks at the password.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { CSRF_COOKIE, CSRF_FIELD, doubleSubmitMatches } from "../csrf.ts";
import { renderSignInPage } from "../auth-pages.ts";
import { clientAddress, safeLocalPath } from "../http.ts";
import { methodNotAllowed, SESSION_COOKIE, type PageKit, type WebEnv } from "../page-kit.ts";
import { MAX_PASSWORD_LENGTH, verifyAgainstDummy, verifyPassword } from "../passwords.ts";
import { createSession, deleteSession, findSession } from "../sessions.ts";
import { DEFAULT_THROTTLE, recordFailure, throttledFor, throttleKeys } from "../throttle.ts";
import { findCredentials } from "../credentials.ts";

const SIGN_IN_FAILED = "The email or password is not correct.";
/** The notice the sign-in page shows after each way of arriving there (its query flag). */
const SIGN_IN_NOTICES: ReadonlyArray<readonly [string, string]> = [
  ["signed-out", "You are signed out."],
  ["signed-out-everywhere", "You are signed out on every device."],
  ["password-set", "Your password is set. Sign in with your email and the new password."],
  ["password-reset", "Your new password is set and every session of the account is signed out. Sign in with the new password."],
];

/** Routes of `/signin` and `/signout` (`/` is the landing page, routes/public-pages.ts). */
export function signInRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const throttle = kit.deps.throttle ?? DEFAULT_THROTTLE;
  /** "Forgot password?" is offered only when reset links can be mailed. */
  const resetByMail = config.mail !== null;
  const app = new Hono<WebEnv>();

  app.get("/signin", async (c) => {
    const next = safeLocalPath(c.req.query("next"));
    if ((await kit.signedIn(c)) !== null) return kit.seeOther(c, next ?? "/account");
    const csrfToken = kit.csrfCookie(c);
    const info = SIGN_IN_NOTICES.find(([query]) => c.req.query(query) !== undefined)?.[1] ?? null;
    return kit.page(c, 200, renderSignInPage(kit.publicCtx, { csrfToken, next, info, resetByMail }));
  });

  app.post("/signin", kit.form, async (c) => {
    const form = c.get("form");
    if (!doubleSubmitMatches(getCookie(c, CSRF_COOKIE), form.get(CSRF_FIELD))) return kit.refuse(c, kit.publicCtx);
    const email = (form.get("email") ?? "").trim().slice(0, 320);
    const password = form.get("password") ?? "";
    const next = safeLocalPath(form.get("next"));
    const csrfToken = kit.csrfCookie(c);
    const again = (status: number, error: string, headers: Record<string, string> = {}) =>
      kit.page(c, status, renderSignInPage(kit.publicCtx, { csrfToken, email, next, error, resetByMail }), headers);
    if (email === "" || password === "") return again(400, "Enter your email and password.");
    const now = clock();
    const keys = throttleKeys(clientAddress(kit.nodeRequest(c), config.trustProxy), email);
    const waitMs = await throttledFor(db, keys, throttle, now);
    if (waitMs > 0) {
      const minutes = Math.ceil(waitMs / 60_000);
      return again(429, `Too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`, { "retry-after": String(Math.ceil(waitMs / 1000)) });
    }
    const credentials = await findCredentials(db, email);
    const ok = credentials === null || password.length > MAX_PASSWORD_LENGTH ? await verifyAgainstDummy(password) : await verifyPassword(password, credentials.passwordHash);
    if (!ok || credentials === null) {
      await recordFailure(db, keys, throttle, now);
      return again(401, SIGN_IN_FAILED);
    }
    // A new token at each sign-in (no session fixation); the browser's old session, if any, ends.
    const previous = await findSession(db, getCookie(c, SESSION_COOKIE), now);
    if (previous) await deleteSession(db, previous.tokenHash);
    const { token } = await createSession(db, credentials.accountId, now, config.sessionTtlMs);
    logger.info({ accountId: credentials.accountId }, "member signed in");
    kit.setSessionCookie(c, token);
    return kit.seeOther(c, next ?? "/account");
  });
  app.all("/signin", methodNotAllowed(kit, "GET, POST"));

  app.post("/signout", kit.session, kit.form, kit.signedInForm, async (c) => {
    await deleteSession(db, c.get("signed")!.session.tokenHash);
    kit.clearSessionCookie(c);
    return kit.seeOther(c, "/signin?signed-out");
  });
  app.all("/signout", methodNotAllowed(kit, "POST"));
  return app;
}
