/**
 * Who is asking, and the checks every POST passes before its handler may change anything:
 * the Origin header (when sent) is ours, the body is a form of at most MAX_FORM_BYTES in
 * UTF-8, and its CSRF token matches. One token check serves both kinds of form: a signed-in
 * member's form carries the session's token, a form before sign-in the double-submit cookie's.
 */
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { every } from "hono/combine";
import { getCookie } from "hono/cookie";
import { getAccountSummary } from "../accounts/accounts.ts";
import { findSession } from "../accounts/sign-in/sessions.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { type PageContext, renderContinuePage, renderMessagePage } from "./auth-pages.ts";
import type { Cookies } from "./cookies.ts";
import { SESSION_COOKIE } from "./cookies.ts";
import {
  CSRF_COOKIE,
  CSRF_FIELD,
  doubleSubmitMatches,
  originAllowed,
  sessionCsrfMatches,
  sessionCsrfToken,
} from "./csrf.ts";
import { ownOrigins, type WebRequest } from "./http.ts";
import { page, refuse, seeOther } from "./responses.ts";
import type { Signed, WebContext, WebEnv } from "./web-env.ts";

/** Largest form body accepted; every form of the site is far smaller. */
export const MAX_FORM_BYTES = 16 * 1024;

/** Why an unconfirmed account's payment or key form is refused (403, code email_unverified). */
export const EMAIL_UNVERIFIED_MESSAGE =
  "This account's email address is not confirmed yet, so it cannot subscribe, buy Tokens or make an " +
  "API key. Open the link we mailed when you signed up, or ask for a new one on your account page.";

interface GuardDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly publicCtx: PageContext;
  readonly cookies: Cookies;
  readonly nodeRequest: (c: Context) => WebRequest;
}

/** The session middlewares: who the member is, and where a signed-out visitor goes. */
export function createSessionGuards({ db, clock, publicCtx, cookies }: GuardDeps) {
  async function signedIn(c: Context): Promise<Signed | null> {
    const session = await findSession(db, getCookie(c, SESSION_COOKIE), clock());
    if (session === null) return null;
    const summary = await getAccountSummary(db, session.accountId, clock());
    return {
      session,
      summary,
      ctx: {
        stylesheet: publicCtx.stylesheet,
        signedIn: { email: summary.email, csrfToken: sessionCsrfToken(session.csrfSecret) },
      },
    };
  }

  /** Loads the member of the session cookie (or null) into `c.var.signed`. */
  const session: MiddlewareHandler<WebEnv> = async (c, next) => {
    c.set("signed", await signedIn(c));
    await next();
  };

  /** After `session`: a signed-out POST changes nothing and goes to the sign-in page. */
  const signedInOnly: MiddlewareHandler<WebEnv> = async (c, next) => {
    if (c.get("signed") !== null) return next();
    cookies.clearSessionCookie(c);
    return seeOther(c, "/signin");
  };

  /** The 403 an unconfirmed account gets where it would pay or make a key. */
  const refuseUnverified = (c: WebContext, signed: Signed): Response =>
    page(
      c,
      403,
      renderMessagePage(signed.ctx, "Confirm your email first", EMAIL_UNVERIFIED_MESSAGE, {
        href: "/account",
        text: "Back to your account",
      }),
      { "x-error-code": "email_unverified" },
    );

  /** For the forms that spend money or make a key (after `memberForm`): the account's email is confirmed. */
  const verifiedEmail: MiddlewareHandler<WebEnv> = async (c, next) => {
    const signed = c.get("signed")!;
    if (!signed.summary.emailVerified) return refuseUnverified(c, signed);
    await next();
  };

  /** For a GET with no session: sign in first, then come back here. */
  function toSignIn(c: Context, path: string): Response {
    // A link from another site (an alert message) arrives without our SameSite=Strict cookie;
    // one same-site reload brings it along (see renderContinuePage).
    if (c.req.header("sec-fetch-site") === "cross-site") return page(c, 200, renderContinuePage(publicCtx, path));
    return seeOther(c, path === "/account" ? "/signin" : `/signin?next=${encodeURIComponent(path)}`);
  }

  return { signedIn, session, signedInOnly, verifiedEmail, refuseUnverified, toSignIn };
}

/** The form middlewares: `anonymousForm` for the forms before sign-in, `memberForm` for a signed-in member's. */
export function createFormGuards(deps: GuardDeps, sessions: ReturnType<typeof createSessionGuards>) {
  const { config, publicCtx, nodeRequest } = deps;
  const ctxOf = (c: WebContext): PageContext => c.get("signed")?.ctx ?? publicCtx;
  const formRefused = (c: WebContext, status: 400 | 413 | 415, message: string) =>
    page(c, status, renderMessagePage(ctxOf(c), "Form refused", `${message} Nothing was changed.`));
  const limit = bodyLimit({
    maxSize: MAX_FORM_BYTES,
    onError: (c) => formRefused(c as WebContext, 413, "The form is too large."),
  });

  /** The Origin, the content type and the body; the form is left in `c.var.form`. */
  const form: MiddlewareHandler<WebEnv> = async (c, next) => {
    if (!originAllowed(c.req.header("origin"), ownOrigins(nodeRequest(c), config.publicBaseUrl, config.trustProxy)))
      return refuse(c, ctxOf(c));
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded")
      return formRefused(c, 415, "Forms must be sent as application/x-www-form-urlencoded.");
    let refused: Response | undefined;
    const limited = await limit(c, async () => {
      let text: string;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(await c.req.arrayBuffer());
      } catch {
        refused = formRefused(c, 400, "The form is not valid UTF-8.");
        return;
      }
      c.set("form", new URLSearchParams(text));
      await next();
    });
    return limited ?? refused;
  };

  /**
   * The CSRF token: the session's for a signed-in member, else the double-submit cookie's; compared in constant time.
   */
  const csrf: MiddlewareHandler<WebEnv> = async (c, next) => {
    const submitted = c.get("form").get(CSRF_FIELD);
    const signed = c.get("signed");
    const matches = signed
      ? sessionCsrfMatches(signed.session.csrfSecret, submitted)
      : doubleSubmitMatches(getCookie(c, CSRF_COOKIE), submitted);
    if (!matches) return refuse(c, ctxOf(c));
    await next();
  };

  return {
    /** A form posted before sign-in (sign-in, sign-up, password links, email confirmation). */
    anonymousForm: every(form, csrf) as MiddlewareHandler<WebEnv>,
    /** A signed-in member's form; leaves the member in `c.var.signed`. */
    memberForm: every(sessions.session, form, sessions.signedInOnly, csrf) as MiddlewareHandler<WebEnv>,
  };
}
