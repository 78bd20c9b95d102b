/**
 * Where a one-time password link leads: `/setup-password?token=…` (links the operator hands
 * out) and `/reset-password?token=…` (links mailed on "Forgot password?"; only when mail is
 * configured). One mechanism for both (accounts/sign-in/password-links.ts): opening the link
 * only looks (a link preview does not use it up) and moves the token out of the address bar,
 * the history and any later request line into a cookie; posting the form uses the link up.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import {
  checkPasswordLink,
  PASSWORD_LINK_TTL_MS,
  type PasswordLinkKind,
  type PasswordLinkTarget,
  redeemPasswordLink,
} from "../../accounts/sign-in/password-links.ts";
import { newPasswordProblem } from "../../accounts/sign-in/passwords.ts";
import { renderContinuePage, renderMessagePage, renderPasswordLinkPage } from "../auth-pages.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type WebContext, type WebEnv } from "../page-kit.ts";
import { isRefusal } from "../responses.ts";

/** Holds a link's token between opening the link and posting the new password. */
const LINK_COOKIE = "password_link";

/** One address a link leads to, and what it answers for a link that does not work (any more). */
interface LinkAddress {
  /** The only kind of link this address takes. */
  readonly kind: PasswordLinkKind;
  readonly path: string;
  readonly goneStatus: 404 | 410;
  readonly goneText: string;
  readonly back: { href: string; text: string };
}

const SETUP: LinkAddress = {
  kind: "setup",
  path: "/setup-password",
  goneStatus: 404,
  goneText:
    "This password link is not valid: it was used already, has expired, " +
    "or a newer link replaced it. Ask your operator for a new one.",
  back: { href: "/signin", text: "Go to sign in" },
};
const RESET: LinkAddress = {
  kind: "reset",
  path: "/reset-password",
  goneStatus: 410,
  goneText:
    "This password reset link does not work any more: it was used already, " +
    "is older than an hour, or a newer link replaced it. Ask for a new one.",
  back: { href: "/forgot-password", text: "Ask for a new link" },
};

/** Routes of `/setup-password`, and of `/reset-password` when mail is configured. */
export function passwordLinkRoutes(kit: PageKit): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  for (const address of kit.deps.config.mail === null ? [SETUP] : [SETUP, RESET]) linkRoutes(kit, app, address);
  return app;
}

/** The two answers of a link's address: the link does not work, or the form to choose the password. */
function linkAnswers(kit: PageKit, at: LinkAddress) {
  const gone = (c: WebContext) => {
    if (getCookie(c, LINK_COOKIE) !== undefined) kit.setCookie(c, LINK_COOKIE, "", 0);
    return kit.page(c, at.goneStatus, renderMessagePage(kit.publicCtx, "Link not valid", at.goneText, at.back));
  };
  const passwordForm = (
    c: WebContext,
    status: number,
    target: PasswordLinkTarget,
    error: string | null = null,
    headers: Record<string, string> = {},
  ) =>
    kit.page(
      c,
      status,
      renderPasswordLinkPage(kit.publicCtx, {
        csrfToken: kit.csrfCookie(c),
        email: target.email,
        kind: target.kind,
        action: at.path,
        error,
      }),
      headers,
    );
  return { gone, passwordForm };
}

function linkRoutes(kit: PageKit, app: Hono<WebEnv>, at: LinkAddress): void {
  const { config, db, clock, logger } = kit.deps;
  const { gone, passwordForm } = linkAnswers(kit, at);

  app.get(at.path, async (c) => {
    const fromLink = c.req.query("token");
    const target = await checkPasswordLink(db, fromLink ?? getCookie(c, LINK_COOKIE) ?? "", at.kind, clock());
    if (target === null) return gone(c);
    if (fromLink === undefined) return passwordForm(c, 200, target);
    kit.setCookie(c, LINK_COOKIE, fromLink, PASSWORD_LINK_TTL_MS[target.kind] / 1000);
    // From a webmail (cross-site), the SameSite=Strict cookie would not ride on the redirect:
    // continue through a same-site reload instead (see renderContinuePage).
    if (c.req.header("sec-fetch-site") === "cross-site")
      return kit.page(c, 200, renderContinuePage(kit.publicCtx, at.path));
    return kit.seeOther(c, at.path);
  });

  app.post(at.path, kit.anonymousForm, async (c) => {
    const fields = c.get("form");
    const token = getCookie(c, LINK_COOKIE) ?? "";
    const password = fields.get("password") ?? "";
    const now = clock();
    const target = await checkPasswordLink(db, token, at.kind, now);
    if (target === null) return gone(c);
    const problem = newPasswordProblem(password, fields.get("confirm") ?? "");
    if (problem !== null) return passwordForm(c, 400, target, problem);
    const used = await kit.withHashPlace(c, clientAddress(kit.nodeRequest(c), config.trustProxy), (hash) =>
      redeemPasswordLink(db, token, at.kind, password, now, config.passwordHashCost, hash),
    );
    if (isRefusal(used)) return passwordForm(c, used.status, target, used.message, used.headers);
    if (used === null) return gone(c);
    logger.info(
      { accountId: used.accountId, kind: used.kind },
      "member password set through a one-time link; every session ended",
    );
    kit.setCookie(c, LINK_COOKIE, "", 0);
    kit.clearSessionCookie(c);
    return kit.seeOther(c, used.kind === "reset" ? "/signin?password-reset" : "/signin?password-set");
  });
  app.all(at.path, methodNotAllowed(kit, "GET, POST"));
}
