/**
 * Self-service sign-up: `/signup` makes an account on the `free` plan with its password and
 * signs it in. Like sign-in it checks the double-submit CSRF token (there is no session yet)
 * and spends the failed sign-in budget of the address and the email, which bounds how many
 * accounts one client can create.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { CSRF_COOKIE, CSRF_FIELD, doubleSubmitMatches } from "../csrf.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { createSession } from "../sessions.ts";
import { signUp } from "../signup.ts";
import { renderSignUpPage } from "../signup-page.ts";
import { DEFAULT_THROTTLE, recordFailure, throttledFor, throttleKeys } from "../throttle.ts";

/** Routes of `/signup`. */
export function signUpRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const throttle = kit.deps.throttle ?? DEFAULT_THROTTLE;
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
    const keys = throttleKeys(clientAddress(kit.nodeRequest(c), config.trustProxy), email);
    const waitMs = await throttledFor(db, keys, throttle, now);
    if (waitMs > 0) {
      const minutes = Math.ceil(waitMs / 60_000);
      return again(429, `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`, { "retry-after": String(Math.ceil(waitMs / 1000)) });
    }
    await recordFailure(db, keys, throttle, now);
    const result = await signUp(db, { email, password: form.get("password") ?? "", confirm: form.get("confirm") ?? "" });
    if (!result.ok) return again(result.status, result.message);
    const { token } = await createSession(db, result.accountId, now, config.sessionTtlMs);
    logger.info({ accountId: result.accountId }, "member signed up");
    kit.setSessionCookie(c, token);
    return kit.seeOther(c, "/account");
  });
  app.all("/signup", methodNotAllowed(kit, "GET, POST"));
  return app;
}
