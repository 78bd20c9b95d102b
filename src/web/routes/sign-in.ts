/**
 * Signing in and out: `/signin` and `/signout` (`/` is the landing page, routes/public-pages.ts).
 * Sign-in checks the double-submit CSRF token (there is no session yet) and the shared failed
 * sign-in budget before it looks at the password.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import {
  attemptsOn,
  type Budget,
  DEFAULT_THROTTLE,
  refundAttempt,
  type SignInPolicy,
  type ThrottleKeys,
  throttleKeys,
} from "../../accounts/attempt-throttle.ts";
import { findCredentials, replacePasswordHash } from "../../accounts/sign-in/credentials.ts";
import { HashRefused } from "../../accounts/sign-in/hash-gate.ts";
import { isKnownAddress, rememberAddress } from "../../accounts/sign-in/known-addresses.ts";
import {
  hashPassword,
  MAX_PASSWORD_LENGTH,
  needsRehash,
  type ScryptCost,
  verifyAgainstDummy,
  verifyPassword,
} from "../../accounts/sign-in/passwords.ts";
import { createSession, deleteSession, findSession } from "../../accounts/sign-in/sessions.ts";
import type { DbHandle } from "../../db/client.ts";
import { type QueuedHash, reserveOrRefuse } from "../attempt-refusals.ts";
import { renderSignInPage } from "../auth-pages.ts";
import { clientAddress, safeLocalPath } from "../http.ts";
import { methodNotAllowed, type PageKit, SESSION_COOKIE, type WebEnv } from "../page-kit.ts";
import { isRefusal, type Refusal } from "../responses.ts";

const SIGN_IN_FAILED = "The email or password is not correct.";
/** The notice the sign-in page shows after each way of arriving there (its query flag). */
const SIGN_IN_NOTICES: ReadonlyArray<readonly [string, string]> = [
  ["signed-out", "You are signed out."],
  ["signed-out-everywhere", "You are signed out on every device."],
  ["password-set", "Your password is set. Sign in with your email and the new password."],
  ["email-verified", "Your email address is confirmed. Sign in to subscribe, buy Tokens or make your API key."],
  [
    "password-reset",
    "Your new password is set and every session of the account is signed out. Sign in with the new password.",
  ],
];

/**
 * What a sign-in reserves: the (email, address) pair always refuses past its limit; the address
 * over every email only for an address new to the account (a member's own address is not shut
 * by a neighbour behind the same NAT); the email only counts (it slows down, never locks).
 */
export function signInBudgets(keys: ThrottleKeys, policy: SignInPolicy, knownAddress: boolean): Budget[] {
  return [
    ...(knownAddress ? [] : [{ key: keys.address, limit: policy.perAddress }]),
    { key: keys.pair, limit: policy.perPair },
    { key: keys.email, limit: null },
  ];
}

/** Waits `ms`, or less when the client goes away (then the work that follows is refused). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", gone);
      resolve();
    }
    function gone() {
      clearTimeout(timer);
      reject(new HashRefused("client_gone"));
    }
    if (signal.aborted) gone();
    else signal.addEventListener("abort", gone, { once: true });
  });
}

/**
 * One sign-in's checks, in order, inside the address's place in the hashing queue: the budgets
 * are reserved before the password is hashed, strangers to the account wait first when the
 * email is under attack, and a success gives the reservation back and remembers the address.
 */
async function checkSignIn(
  db: DbHandle,
  throttle: SignInPolicy,
  cost: ScryptCost,
  attempt: { email: string; password: string; address: string; now: number },
  hash: QueuedHash,
  signal: AbortSignal,
): Promise<Refusal | { kind: "failed" } | { kind: "signed-in"; accountId: number }> {
  const { email, password, address, now } = attempt;
  const credentials = await findCredentials(db, email);
  // Looked up for an unknown email too, so both take the same statements.
  const known = (await isKnownAddress(db, credentials?.accountId ?? 0, address)) && credentials !== null;
  const keys = throttleKeys(address, email);
  const budgets = signInBudgets(keys, throttle, known);
  const refused = await reserveOrRefuse(db, budgets, throttle, now, "Too many failed sign-ins.");
  if (refused !== null) return refused;
  // Strangers guessing at this email slow down addresses new to it; they never lock it.
  if (!known && (await attemptsOn(db, keys.email, throttle.windowMs, now)) > throttle.perEmail)
    await pause(throttle.slowdownMs, signal);
  const ok = await hash(() =>
    credentials === null || password.length > MAX_PASSWORD_LENGTH
      ? verifyAgainstDummy(password, cost)
      : verifyPassword(password, credentials.passwordHash),
  );
  if (!ok || credentials === null) return { kind: "failed" };
  if (needsRehash(credentials.passwordHash, cost)) {
    const rehashed = await hash(() => hashPassword(password, cost));
    await replacePasswordHash(db, credentials.accountId, credentials.passwordHash, rehashed);
  }
  await refundAttempt(
    db,
    budgets.map((b) => b.key),
  );
  await rememberAddress(db, credentials.accountId, address, now);
  return { kind: "signed-in", accountId: credentials.accountId };
}

/** Routes of `/signin` and `/signout` (`/` is the landing page, routes/public-pages.ts). */
export function signInRoutes(kit: PageKit): Hono<WebEnv> {
  const { config, db, clock, logger } = kit.deps;
  const throttle = kit.deps.throttle ?? DEFAULT_THROTTLE;
  /** "Forgot password?" is offered only when reset links can be mailed. */
  const resetByMail = config.mail !== null;
  const app = new Hono<WebEnv>();

  app.get("/signin", async (c) => {
    const next = safeLocalPath(c.req.query("next"), config.publicBaseUrl);
    if ((await kit.signedIn(c)) !== null) return kit.seeOther(c, next ?? "/account");
    const csrfToken = kit.csrfCookie(c);
    const info = SIGN_IN_NOTICES.find(([query]) => c.req.query(query) !== undefined)?.[1] ?? null;
    return kit.page(c, 200, renderSignInPage(kit.publicCtx, { csrfToken, next, info, resetByMail }));
  });

  app.post("/signin", kit.anonymousForm, async (c) => {
    const form = c.get("form");
    const email = (form.get("email") ?? "").trim().slice(0, 320);
    const password = form.get("password") ?? "";
    const next = safeLocalPath(form.get("next"), config.publicBaseUrl);
    const csrfToken = kit.csrfCookie(c);
    const again = (status: number, error: string, headers: Record<string, string> = {}) =>
      kit.page(c, status, renderSignInPage(kit.publicCtx, { csrfToken, email, next, error, resetByMail }), headers);
    if (email === "" || password === "") return again(400, "Enter your email and password.");
    const now = clock();
    const address = clientAddress(kit.nodeRequest(c), config.trustProxy);
    const attempt = { email, password, address, now };
    const outcome = await kit.withHashPlace(c, address, (hash) =>
      checkSignIn(db, throttle, config.passwordHashCost, attempt, hash, c.req.raw.signal),
    );
    if (isRefusal(outcome)) return again(outcome.status, outcome.message, outcome.headers);
    if (outcome.kind === "failed") return again(401, SIGN_IN_FAILED);
    const credentials = outcome;
    // A new token at each sign-in (no session fixation); the browser's old session, if any, ends.
    const previous = await findSession(db, getCookie(c, SESSION_COOKIE), now);
    if (previous) await deleteSession(db, previous.tokenHash);
    const { token } = await createSession(db, credentials.accountId, now, config.sessionTtlMs);
    logger.info({ accountId: credentials.accountId }, "member signed in");
    kit.setSessionCookie(c, token);
    return kit.seeOther(c, next ?? "/account");
  });
  app.all("/signin", methodNotAllowed(kit, "GET, POST"));

  app.post("/signout", kit.memberForm, async (c) => {
    await deleteSession(db, c.get("signed")!.session.tokenHash);
    kit.clearSessionCookie(c);
    return kit.seeOther(c, "/signin?signed-out");
  });
  app.all("/signout", methodNotAllowed(kit, "POST"));
  return app;
}
