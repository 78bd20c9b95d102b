/**
 * A signed-in member's password and sessions: `/account/password` changes the password (the
 * current one first; every other session ends, this one stays) and `/account/sessions/end`
 * ("Sign out everywhere") ends every session of the account, this browser's included.
 */
import { Hono } from "hono";
import { DEFAULT_THROTTLE, refundAttempt, throttleKeys } from "../../accounts/attempt-throttle.ts";
import { changeMemberPassword, findCredentials } from "../../accounts/sign-in/credentials.ts";
import { newPasswordProblem, verifyPassword } from "../../accounts/sign-in/passwords.ts";
import { deleteAccountSessions } from "../../accounts/sign-in/sessions.ts";
import { reserveOrRefuse } from "../attempt-refusals.ts";
import { renderChangePasswordPage } from "../auth-pages.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type WebEnv } from "../page-kit.ts";
import { isRefusal } from "../responses.ts";

/** Routes of `/account/password` and `/account/sessions/end`. */
export function accountSecurityRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const throttle = kit.deps.throttle ?? DEFAULT_THROTTLE;
  const app = new Hono<WebEnv>();

  app.get("/account/password", kit.session, (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/account/password");
    const info =
      c.req.query("changed") !== undefined
        ? "Password changed. Every other session of this account is signed out."
        : null;
    return kit.page(c, 200, renderChangePasswordPage(signed.ctx, { info }));
  });

  app.post("/account/password", kit.memberForm, async (c) => {
    const signed = c.get("signed")!;
    const form = c.get("form");
    const again = (status: number, error: string, headers: Record<string, string> = {}) =>
      kit.page(c, status, renderChangePasswordPage(signed.ctx, { error }), headers);
    const password = form.get("password") ?? "";
    const problem = newPasswordProblem(password, form.get("confirm") ?? "");
    if (problem !== null) return again(400, problem);
    // A wrong current password counts as a failed sign-in of this (email, address) pair: a
    // session left open somewhere must not become a way to guess the password without a
    // budget. Only the pair: strangers guessing at the email elsewhere cannot block the change.
    const now = clock();
    const address = clientAddress(kit.nodeRequest(c), config.trustProxy);
    const pair = throttleKeys(address, signed.summary.email).pair;
    const outcome = await kit.withHashPlace(c, address, async (hash) => {
      const refused = await reserveOrRefuse(
        db,
        [{ key: pair, limit: throttle.perPair }],
        throttle,
        now,
        "Too many wrong passwords.",
      );
      if (refused !== null) return refused;
      const credentials = await findCredentials(db, signed.summary.email);
      const current = form.get("current") ?? "";
      if (
        credentials === null ||
        credentials.accountId !== signed.session.accountId ||
        !(await hash(() => verifyPassword(current, credentials.passwordHash)))
      )
        return { kind: "wrong" } as const;
      await refundAttempt(db, [pair]);
      return {
        kind: "changed",
        ...(await changeMemberPassword(
          db,
          signed.session.accountId,
          password,
          signed.session.tokenHash,
          config.passwordHashCost,
          hash,
        )),
      } as const;
    });
    if (isRefusal(outcome)) return again(outcome.status, outcome.message, outcome.headers);
    if (outcome.kind === "wrong") return again(400, "The current password is not correct. Nothing was changed.");
    const { sessionsRevoked } = outcome;
    logger.info(
      { accountId: signed.session.accountId, sessionsRevoked },
      "member changed their password; other sessions ended",
    );
    return kit.seeOther(c, "/account/password?changed");
  });
  app.all("/account/password", methodNotAllowed(kit, "GET, POST"));

  app.post("/account/sessions/end", kit.memberForm, async (c) => {
    const accountId = c.get("signed")!.session.accountId;
    const ended = await deleteAccountSessions(db, accountId);
    logger.info({ accountId, sessionsEnded: ended }, "member signed out everywhere");
    kit.clearSessionCookie(c);
    return kit.seeOther(c, "/signin?signed-out-everywhere");
  });
  app.all("/account/sessions/end", methodNotAllowed(kit, "POST"));
  return app;
}
