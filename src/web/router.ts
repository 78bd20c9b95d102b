/**
 * The web pages' routes, tried by the public listener's fallback before its 404. Every page is
 * server-rendered; every POST passes the Origin check and a CSRF token check before it changes
 * anything; every signed-in page reads the account from the session only (there is no account
 * id in any URL or form), so a member can only ever see their own account.
 */
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { errorSummary } from "../logger.ts";
import { getAccountSummary, PAID_PLANS, regenerateKey, type AccountSummary } from "../accounts/accounts.ts";
import { applyMonthlyGrant } from "../billing/tokens.ts";
import { recentLedgerEntries } from "../billing/ledger.ts";
import { AlertSettingsError, clearAlertSettings, getAlertSettings, parseAlertSettings, saveAlertSettings } from "../alerts/settings.ts";
import { isWellFormedSymbol, normaliseTimeframe } from "../signals/request.ts";
import { renderAccountPage, renderKeyConfirmPage, renderNewKeyPage, type AccountView } from "./account-page.ts";
import { loadAssets, type Assets } from "./assets.ts";
import { renderContinuePage, renderMessagePage, renderSetupPasswordPage, renderSignInPage, type PageContext } from "./auth-pages.ts";
import { listChartCoins, loadChartData } from "./chart-data.ts";
import { chartPath, renderChartIndexPage, renderChartPage } from "./chart-page.ts";
import { checkSetupToken, findCredentials, redeemSetupToken } from "./credentials.ts";
import { CSRF_COOKIE, CSRF_FIELD, doubleSubmitMatches, isWellFormedCsrfCookie, newCsrfCookieValue, originAllowed, sessionCsrfMatches, sessionCsrfToken } from "./csrf.ts";
import { accountPageCsp, clientAddress, cookie, header, ownOrigins, parseCookies, readForm, redirect, requestIsTls, safeLocalPath, sendHtml, type WebRequest, type WebResponse } from "./http.ts";
import { checkPasswordPolicy, MAX_PASSWORD_LENGTH, PasswordPolicyError, verifyAgainstDummy, verifyPassword } from "./passwords.ts";
import { createSession, deleteSession, findSession, type WebSession } from "./sessions.ts";
import { DEFAULT_THROTTLE, recordFailure, throttledFor, throttleKeys, type ThrottlePolicy } from "./throttle.ts";
import { createStripeClient } from "../payments/stripe-client.ts";
import { billingView, buyPack, openBillingPortal, stripeWebhookAnswer, sendWebhookAnswer, subscribe, type PaymentFormResult, type PaymentRouteDeps } from "./payment-routes.ts";
import { signUp } from "./signup.ts";
import { renderSignUpPage } from "./signup-page.ts";

export interface WebDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Failed sign-in budget (tests may pass a smaller one). */
  readonly throttle?: ThrottlePolicy;
}

/** Serves a web route; resolves false when the path is not one of ours. */
export type WebRouter = (req: WebRequest, res: WebResponse) => Promise<boolean>;

/** Name of the session cookie. */
export const SESSION_COOKIE = "sid";
const LEDGER_ROWS = 20;
const CSRF_COOKIE_MAX_AGE_S = 2 * 3600;
const SIGN_IN_FAILED = "The email or password is not correct.";

interface Signed {
  readonly session: WebSession;
  readonly summary: AccountSummary;
  readonly ctx: PageContext & { signedIn: { email: string; csrfToken: string } };
}

/** Builds the web router over its dependencies (assets are read once, here). */
export function createWebRouter(deps: WebDeps): WebRouter {
  const { config, db, clock, logger } = deps;
  const throttle = deps.throttle ?? DEFAULT_THROTTLE;
  const assets: Assets = loadAssets();
  const stylesheet = assets.url("app.css");
  const publicCtx: PageContext = { stylesheet, signedIn: null };
  const payments: PaymentRouteDeps = { ...deps, stripe: config.payments.stripe ? createStripeClient(config.payments.stripe) : null };
  const secureCookies = (req: WebRequest) => requestIsTls(req, config.trustProxy) || config.publicBaseUrl.startsWith("https:");

  const sessionCookie = (req: WebRequest, token: string) => cookie(SESSION_COOKIE, token, { maxAgeSeconds: config.sessionTtlMs / 1000, secure: secureCookies(req) });
  const clearSessionCookie = (req: WebRequest) => cookie(SESSION_COOKIE, "", { maxAgeSeconds: 0, secure: secureCookies(req) });

  /** The double-submit value of this browser, and the Set-Cookie to send when it is new. */
  function csrfCookieFor(req: WebRequest): { value: string; setCookie: string[] } {
    const existing = parseCookies(req).get(CSRF_COOKIE);
    if (isWellFormedCsrfCookie(existing)) return { value: existing, setCookie: [] };
    const value = newCsrfCookieValue();
    return { value, setCookie: [cookie(CSRF_COOKIE, value, { maxAgeSeconds: CSRF_COOKIE_MAX_AGE_S, secure: secureCookies(req) })] };
  }

  function refuse(res: WebResponse, ctx: PageContext): void {
    sendHtml(
      res,
      403,
      renderMessagePage(ctx, "Form refused", "This form did not come from this site, or it has expired. Nothing was changed. Go back, reload the page and try again."),
    );
  }

  async function signedIn(req: WebRequest): Promise<Signed | null> {
    const session = await findSession(db, parseCookies(req).get(SESSION_COOKIE), clock());
    if (session === null) return null;
    const summary = await getAccountSummary(db, session.accountId, clock());
    return { session, summary, ctx: { stylesheet, signedIn: { email: summary.email, csrfToken: sessionCsrfToken(session.csrfSecret) } } };
  }

  /** For a GET with no session: sign in first, then come back here. */
  function toSignIn(req: WebRequest, res: WebResponse, path: string): void {
    // A link from another site (an alert message) arrives without our SameSite=Strict cookie;
    // one same-site reload brings it along (see renderContinuePage).
    if (header(req, "sec-fetch-site") === "cross-site") {
      sendHtml(res, 200, renderContinuePage(publicCtx, path));
      return;
    }
    redirect(res, path === "/account" ? "/signin" : `/signin?next=${encodeURIComponent(path)}`);
  }

  /**
   * The checks every POST passes before it may change anything: the Origin header (when sent)
   * is ours, the body is a small form, and for signed-in forms the session and its CSRF token.
   */
  async function postForm(req: WebRequest, res: WebResponse, ctx: PageContext): Promise<URLSearchParams | null> {
    if (!originAllowed(header(req, "origin"), ownOrigins(req, config.publicBaseUrl, config.trustProxy))) {
      refuse(res, ctx);
      return null;
    }
    const body = await readForm(req);
    if (!body.ok) {
      sendHtml(res, body.status, renderMessagePage(ctx, "Form refused", `${body.message} Nothing was changed.`));
      return null;
    }
    return body.form;
  }

  async function signedInPost(req: WebRequest, res: WebResponse): Promise<{ signed: Signed; form: URLSearchParams } | null> {
    const signed = await signedIn(req);
    const form = await postForm(req, res, signed?.ctx ?? publicCtx);
    if (form === null) return null;
    if (signed === null) {
      redirect(res, "/signin", { "set-cookie": clearSessionCookie(req) });
      return null;
    }
    if (!sessionCsrfMatches(signed.session.csrfSecret, form.get(CSRF_FIELD))) {
      refuse(res, signed.ctx);
      return null;
    }
    return { signed, form };
  }

  // ---- sign-in and sign-out -------------------------------------------------------------

  async function getSignIn(req: WebRequest, res: WebResponse, url: URL): Promise<void> {
    const next = safeLocalPath(url.searchParams.get("next"));
    if ((await signedIn(req)) !== null) return redirect(res, next ?? "/account");
    const csrf = csrfCookieFor(req);
    const info = url.searchParams.has("signed-out")
      ? "You are signed out."
      : url.searchParams.has("password-set")
        ? "Your password is set. Sign in with your email and the new password."
        : null;
    sendHtml(res, 200, renderSignInPage(publicCtx, { csrfToken: csrf.value, next, info }), { "set-cookie": csrf.setCookie });
  }

  async function postSignIn(req: WebRequest, res: WebResponse): Promise<void> {
    const form = await postForm(req, res, publicCtx);
    if (form === null) return;
    if (!doubleSubmitMatches(parseCookies(req).get(CSRF_COOKIE), form.get(CSRF_FIELD))) return refuse(res, publicCtx);
    const email = (form.get("email") ?? "").trim().slice(0, 320);
    const password = form.get("password") ?? "";
    const next = safeLocalPath(form.get("next"));
    const csrf = csrfCookieFor(req);
    const again = (status: number, error: string, extra: Record<string, string> = {}) =>
      sendHtml(res, status, renderSignInPage(publicCtx, { csrfToken: csrf.value, email, next, error }), { ...extra, "set-cookie": csrf.setCookie });
    if (email === "" || password === "") return again(400, "Enter your email and password.");
    const now = clock();
    const keys = throttleKeys(clientAddress(req, config.trustProxy), email);
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
    const previous = await findSession(db, parseCookies(req).get(SESSION_COOKIE), now);
    if (previous) await deleteSession(db, previous.tokenHash);
    const { token } = await createSession(db, credentials.accountId, now, config.sessionTtlMs);
    logger.info({ accountId: credentials.accountId }, "member signed in");
    redirect(res, next ?? "/account", { "set-cookie": sessionCookie(req, token) });
  }

  async function postSignOut(req: WebRequest, res: WebResponse): Promise<void> {
    const posted = await signedInPost(req, res);
    if (posted === null) return;
    await deleteSession(db, posted.signed.session.tokenHash);
    redirect(res, "/signin?signed-out", { "set-cookie": clearSessionCookie(req) });
  }

  // ---- password setup link ----------------------------------------------------------------

  const invalidLink = (res: WebResponse) =>
    sendHtml(
      res,
      404,
      renderMessagePage(publicCtx, "Link not valid", "This password link is not valid: it was used already, has expired, or a newer link replaced it. Ask your operator for a new one.", {
        href: "/signin",
        text: "Go to sign in",
      }),
    );

  async function getSetupPassword(req: WebRequest, res: WebResponse, url: URL): Promise<void> {
    const token = url.searchParams.get("token") ?? "";
    // Only looks: opening (or a link preview fetching) the page does not use the link up.
    const target = await checkSetupToken(db, token, clock());
    if (target === null) return invalidLink(res);
    const csrf = csrfCookieFor(req);
    sendHtml(res, 200, renderSetupPasswordPage(publicCtx, { csrfToken: csrf.value, token, email: target.email }), { "set-cookie": csrf.setCookie });
  }

  async function postSetupPassword(req: WebRequest, res: WebResponse): Promise<void> {
    const form = await postForm(req, res, publicCtx);
    if (form === null) return;
    if (!doubleSubmitMatches(parseCookies(req).get(CSRF_COOKIE), form.get(CSRF_FIELD))) return refuse(res, publicCtx);
    const token = form.get("token") ?? "";
    const password = form.get("password") ?? "";
    const now = clock();
    const target = await checkSetupToken(db, token, now);
    if (target === null) return invalidLink(res);
    const csrf = csrfCookieFor(req);
    const again = (error: string) => sendHtml(res, 400, renderSetupPasswordPage(publicCtx, { csrfToken: csrf.value, token, email: target.email, error }), { "set-cookie": csrf.setCookie });
    if (password !== (form.get("confirm") ?? "")) return again("The two passwords differ. Type the same password twice.");
    try {
      checkPasswordPolicy(password);
    } catch (err) {
      if (err instanceof PasswordPolicyError) return again(`Not set: ${err.message}.`);
      throw err;
    }
    const accountId = await redeemSetupToken(db, token, password, now);
    if (accountId === null) return invalidLink(res);
    logger.info({ accountId }, "member password set through a setup link");
    redirect(res, "/signin?password-set", { "set-cookie": clearSessionCookie(req) });
  }

  // ---- account ------------------------------------------------------------------------------

  async function accountView(signed: Signed, extra: Partial<AccountView> = {}): Promise<AccountView> {
    const now = clock();
    return {
      summary: signed.summary,
      now,
      dailyCap: config.limits.dailyCap,
      monthlyGrant: config.limits.monthlyGrant,
      ledger: await recentLedgerEntries(db, signed.session.accountId, LEDGER_ROWS),
      alerts: await getAlertSettings(db, signed.session.accountId),
      billing: billingView(payments, signed.summary, signed.ctx.signedIn.csrfToken),
      ...extra,
    };
  }

  async function getAccount(req: WebRequest, res: WebResponse, url: URL): Promise<void> {
    let signed = await signedIn(req);
    if (signed === null) return toSignIn(req, res, "/account");
    // The month's grant is applied lazily; applying it here shows the balance the next call sees.
    await applyMonthlyGrant(db, signed.session.accountId, config.limits, clock());
    signed = { ...signed, summary: await getAccountSummary(db, signed.session.accountId, clock()) };
    const flash = url.searchParams.has("alerts-saved")
      ? "Alert settings saved."
      : url.searchParams.has("alerts-stopped")
        ? "Alerts stopped."
        : url.searchParams.get("checkout") === "success"
          ? "Thank you. Stripe is confirming your payment; your Tokens or plan appear here as soon as it has."
          : url.searchParams.get("checkout") === "cancelled"
            ? "Checkout cancelled. Nothing was charged."
            : null;
    sendHtml(res, 200, renderAccountPage(signed.ctx, await accountView(signed, { flash })), { "content-security-policy": accountPageCsp(config.payments) });
  }

  async function getKeyConfirm(req: WebRequest, res: WebResponse): Promise<void> {
    const signed = await signedIn(req);
    if (signed === null) return toSignIn(req, res, "/account/key");
    sendHtml(res, 200, renderKeyConfirmPage(signed.ctx, signed.summary.keyPrefix));
  }

  async function postKey(req: WebRequest, res: WebResponse): Promise<void> {
    const posted = await signedInPost(req, res);
    if (posted === null) return;
    if (posted.form.get("confirm") !== "yes") return redirect(res, "/account/key");
    const { summary } = posted.signed;
    if (summary.keyPrefix === "" && !(PAID_PLANS as readonly string[]).includes(summary.plan)) {
      return sendHtml(res, 403, renderMessagePage(posted.signed.ctx, "Subscribe first", "An API key is made once your plan is paid. Subscribe on your account page.", { href: "/account", text: "Back to your account" }));
    }
    const { apiKey } = await regenerateKey(db, posted.signed.session.accountId, clock());
    logger.info({ accountId: posted.signed.session.accountId }, "api key regenerated from the account page");
    // The one response that carries a full key: never stored by any cache (sendHtml: no-store).
    sendHtml(res, 200, renderNewKeyPage(posted.signed.ctx, apiKey, [assets.url("account.js")]));
  }

  async function postAlerts(req: WebRequest, res: WebResponse): Promise<void> {
    const posted = await signedInPost(req, res);
    if (posted === null) return;
    const { signed, form } = posted;
    const accountId = signed.session.accountId;
    if (form.get("action") === "clear") {
      await clearAlertSettings(db, accountId);
      return redirect(res, "/account?alerts-stopped");
    }
    const input = { chatId: (form.get("chat_id") ?? "").slice(0, 64), symbols: (form.get("symbols") ?? "").slice(0, 800), timeframes: form.getAll("timeframes").slice(0, 10) };
    try {
      const settings = parseAlertSettings(input);
      await saveAlertSettings(db, accountId, settings);
      return redirect(res, "/account?alerts-saved");
    } catch (err) {
      if (!(err instanceof AlertSettingsError)) throw err;
      const view = await accountView(signed, { alertsForm: { ...input, error: `Not saved: ${err.message}.` } });
      sendHtml(res, 400, renderAccountPage(signed.ctx, view));
    }
  }

  // ---- charts -------------------------------------------------------------------------------

  async function getChartIndex(req: WebRequest, res: WebResponse): Promise<void> {
    const signed = await signedIn(req);
    if (signed === null) return toSignIn(req, res, "/charts");
    sendHtml(res, 200, renderChartIndexPage(signed.ctx, await listChartCoins(db)));
  }

  async function getChart(req: WebRequest, res: WebResponse, url: URL, rawSymbol: string): Promise<void> {
    const symbol = rawSymbol.toUpperCase();
    const tf = normaliseTimeframe(url.searchParams.get("tf") ?? undefined);
    const signed = await signedIn(req);
    if (signed === null) return toSignIn(req, res, chartPath(symbol, tf));
    const data = isWellFormedSymbol(symbol) ? await loadChartData(db, symbol, tf) : null;
    if (data === null) {
      return sendHtml(res, 404, renderMessagePage(signed.ctx, "No such coin", `There is no chart for "${rawSymbol.slice(0, 20)}": no candles were ever received for it.`, { href: "/charts", text: "See the coins with charts" }));
    }
    if (!data.timeframes.includes(tf)) {
      return sendHtml(res, 404, renderMessagePage(signed.ctx, "No such timeframe", `${symbol} has no ${tf} candles; it has ${data.timeframes.join(", ")}.`, { href: chartPath(symbol, data.timeframes[0]!), text: `Open ${symbol} ${data.timeframes[0]}` }));
    }
    sendHtml(res, 200, renderChartPage(signed.ctx, data, [assets.url("lightweight-charts.js"), assets.url("chart.js")]));
  }

  // ---- sign-up and payments ------------------------------------------------------------------

  async function getSignUp(req: WebRequest, res: WebResponse): Promise<void> {
    if ((await signedIn(req)) !== null) return redirect(res, "/account");
    const csrf = csrfCookieFor(req);
    sendHtml(res, 200, renderSignUpPage(publicCtx, { csrfToken: csrf.value }), { "set-cookie": csrf.setCookie });
  }

  async function postSignUp(req: WebRequest, res: WebResponse): Promise<void> {
    const form = await postForm(req, res, publicCtx);
    if (form === null) return;
    if (!doubleSubmitMatches(parseCookies(req).get(CSRF_COOKIE), form.get(CSRF_FIELD))) return refuse(res, publicCtx);
    const email = (form.get("email") ?? "").trim().slice(0, 320);
    const csrf = csrfCookieFor(req);
    const again = (status: number, error: string, extra: Record<string, string> = {}) =>
      sendHtml(res, status, renderSignUpPage(publicCtx, { csrfToken: csrf.value, email, error }), { ...extra, "set-cookie": csrf.setCookie });
    // Sign-ups spend the sign-in budget of the address and the email: bounded account creation.
    const now = clock();
    const keys = throttleKeys(clientAddress(req, config.trustProxy), email);
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
    redirect(res, "/account", { "set-cookie": sessionCookie(req, token) });
  }

  /** A payment form post: session, Origin and CSRF checked here, the rest in payment-routes.ts. */
  const paymentForm =
    (action: (deps: PaymentRouteDeps, account: AccountSummary, form: URLSearchParams) => Promise<PaymentFormResult>) => async (req: WebRequest, res: WebResponse) => {
      const posted = await signedInPost(req, res);
      if (posted === null) return;
      const result = await action(payments, posted.signed.summary, posted.form);
      if (result.kind === "redirect") return redirect(res, result.location);
      sendHtml(res, result.status, renderMessagePage(posted.signed.ctx, result.title, result.message, { href: "/account", text: "Back to your account" }));
    };

  // ---- dispatch -----------------------------------------------------------------------------

  type Handler = (req: WebRequest, res: WebResponse, url: URL) => Promise<void>;
  const routes = new Map<string, { GET?: Handler; POST?: Handler }>([
    ["/", { GET: async (req, res) => redirect(res, (await signedIn(req)) ? "/account" : "/signin") }],
    ["/signin", { GET: getSignIn, POST: postSignIn }],
    ["/signout", { POST: postSignOut }],
    ["/setup-password", { GET: getSetupPassword, POST: postSetupPassword }],
    ["/account", { GET: getAccount }],
    ["/account/key", { GET: getKeyConfirm, POST: postKey }],
    ["/account/alerts", { POST: postAlerts }],
    ["/signup", { GET: getSignUp, POST: postSignUp }],
    ["/account/buy", { POST: paymentForm(buyPack) }],
    ["/account/subscribe", { POST: paymentForm(subscribe) }],
    ["/account/billing-portal", { POST: paymentForm((d, account) => openBillingPortal(d, account)) }],
    ["/webhooks/stripe", { POST: async (req, res) => sendWebhookAnswer(res, await stripeWebhookAnswer(payments, req)) }],
    ["/charts", { GET: getChartIndex }],
  ]);
  const CHART_PATH = /^\/charts\/([^/]{1,40})$/;
  // A malformed escape cannot name a coin; it becomes a code that fails the symbol check.
  const decodedSegment = (segment: string) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      return segment;
    }
  };

  return async function handleWeb(req, res) {
    const url = new URL(req.url ?? "/", "http://local.invalid");
    const path = url.pathname;
    if (assets.handle(req, res, path)) return true;
    const chart = CHART_PATH.exec(path);
    const route: { GET?: Handler; POST?: Handler } | undefined = chart
      ? { GET: (rq, rs, u) => getChart(rq, rs, u, decodedSegment(chart[1]!)) }
      : routes.get(path);
    if (!route) return false;
    const method = req.method === "HEAD" ? "GET" : req.method;
    const handler = method === "GET" || method === "POST" ? route[method] : undefined;
    try {
      if (!handler) {
        const allow = Object.keys(route).join(", ");
        sendHtml(res, 405, renderMessagePage(publicCtx, "Method not allowed", `This address accepts ${allow} only.`), { allow });
        return true;
      }
      await handler(req, res, url);
    } catch (err) {
      logger.error({ err: errorSummary(err), path }, "web page failed");
      if (!res.headersSent) sendHtml(res, 500, renderMessagePage(publicCtx, "Something went wrong", "The page could not be built. Try again in a moment."));
      else res.end();
    }
    return true;
  };
}
