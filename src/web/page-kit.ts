/**
 * What every page route shares: the web layer's hono environment, the security headers, the
 * session and CSRF cookies, the checks every POST passes before it may change anything, and
 * the few ways a page answers (a page, a 303 redirect, a refusal). Built once per app over its
 * dependencies; the route modules in routes/ take it as their only argument.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { HttpBindings, Http2Bindings } from "@hono/node-server";
import { getCookie, setCookie as setHonoCookie } from "hono/cookie";
import { bodyLimit } from "hono/body-limit";
import { secureHeaders } from "hono/secure-headers";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { getAccountSummary, type AccountSummary } from "../accounts/accounts.ts";
import { createStripeClient } from "../payments/stripe-client.ts";
import { PlanPrices } from "../payments/plan-prices.ts";
import { loadOffer } from "./offer.ts";
import type { Timeframe } from "../market/timeframes.ts";
import type { SignalSnapshot } from "../market/snapshot.ts";
import { loadAssets, type Assets } from "./assets.ts";
import { ChartDataCache } from "../track-record/chart-data.ts";
import type { PaymentRouteDeps } from "./payment-actions.ts";
import { renderContinuePage, renderMessagePage, type PageContext } from "./auth-pages.ts";
import { CSRF_COOKIE, CSRF_FIELD, isWellFormedCsrfCookie, newCsrfCookieValue, originAllowed, sessionCsrfMatches, sessionCsrfToken } from "./csrf.ts";
import { ownOrigins, requestIsTls, type WebRequest } from "./http.ts";
import { findSession, type WebSession } from "../accounts/sign-in/sessions.ts";
import { DEFAULT_HASH_GATE, HashGate, HashRefused, type HashOutcome } from "../accounts/sign-in/hash-gate.ts";
import type { SignInPolicy } from "../accounts/attempt-throttle.ts";

export interface WebDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Failed sign-in budget (tests may pass a smaller one). */
  readonly throttle?: SignInPolicy;
  /** The process's password hashing queue (tests may pass their own). */
  readonly hashGate?: HashGate;
  /** Told each outcome of the password hashing queue (the server counts them in a metric). */
  readonly onPasswordHash?: (outcome: HashOutcome) => void;
  /** The current readings (what a paid call reads); the live watchlist shows them. Absent: no watchlist. */
  readonly snapshot?: SignalSnapshot;
  /** Wakes the live watchlists when the readings change (events/event-hub.ts's SignalEventHub). */
  readonly readings?: WakeupHub;
  /** Told each time a series' chart data and track record are computed (the server counts them in a metric). */
  readonly onTrackRecordComputed?: (symbol: string, tf: Timeframe) => void;
}

/** A wake-up counter to wait on (the server's SignalEventHub, named by shape: web/ does not import events/). */
export interface WakeupHub {
  readonly wakeups: number;
  readonly closed: boolean;
  wait(since: number, signal: AbortSignal, timeoutMs: number): Promise<void>;
}

/** A signed-in member: their session, account summary and the context their pages render in. */
export interface Signed {
  readonly session: WebSession;
  readonly summary: AccountSummary;
  readonly ctx: PageContext & { signedIn: { email: string; csrfToken: string } };
}

/** The hono environment of the web pages: Node's request (for the socket) and per-request values. */
export interface WebEnv {
  Bindings: HttpBindings | Http2Bindings;
  Variables: {
    /** Set by `kit.session` on the routes that need it. */
    signed: Signed | null;
    /** Set by `kit.form` on POST routes. */
    form: URLSearchParams;
  };
}
export type WebContext = Context<WebEnv>;

/** Why an unconfirmed account's payment or key form is refused (403, code email_unverified). */
export const EMAIL_UNVERIFIED_MESSAGE =
  "This account's email address is not confirmed yet, so it cannot subscribe, buy Tokens or make an API key. Open the link we mailed when you signed up, or ask for a new one on your account page.";

/** Name of the session cookie. */
export const SESSION_COOKIE = "sid";
/** Largest form body accepted; every form of the site is far smaller. */
export const MAX_FORM_BYTES = 16 * 1024;
const CSRF_COOKIE_MAX_AGE_S = 2 * 3600;

/** Stripe's hosted pages a payment form's 303 leads to (form-action covers redirects). */
const STRIPE_FORM_TARGETS = ["https://checkout.stripe.com", "https://billing.stripe.com"];

/** Where the Connect Telegram form's redirect leads (alerts/telegram-connect.ts builds the link). */
const TELEGRAM_LINK_ORIGIN = "https://t.me";

/**
 * Sent with every page. Scripts and styles only from our own origin (files, no inline code),
 * no framing, no referrer to other sites (setup links carry a token in the URL). HSTS stays the
 * TLS proxy's decision (includeSubDomains would reach the operator's other hosts). Forms may
 * lead to Stripe's Checkout and Billing Portal; with STRIPE_API_BASE pointing elsewhere (a local
 * fake in tests), that origin serves the sessions' pages, so it is allowed too. With a Telegram
 * bot username set, the Connect form leads to https://t.me (its 303 is a form target too).
 */
export function pageSecurityHeaders(config: Config): MiddlewareHandler {
  const apiBase = config.payments.stripe?.apiBase.url;
  const paymentOrigins = apiBase && apiBase !== "https://api.stripe.com" ? [...STRIPE_FORM_TARGETS, apiBase] : STRIPE_FORM_TARGETS;
  const telegramOrigins = config.alerts.telegramBotUsername === null ? [] : [TELEGRAM_LINK_ORIGIN];
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'", ...paymentOrigins, ...telegramOrigins],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    referrerPolicy: "same-origin",
    xFrameOptions: "DENY",
    crossOriginOpenerPolicy: "same-origin",
    strictTransportSecurity: false,
  });
}

/** Builds the shared page helpers over the web dependencies (assets are read once, here). */
export function createPageKit(deps: WebDeps) {
  const { config, db, clock } = deps;
  const assets: Assets = loadAssets();
  const stylesheet = assets.url("app.css");
  const publicCtx: PageContext = { stylesheet, signedIn: null };
  /** One computed copy per coin and timeframe, shared by the chart pages and /track-record. */
  const chartData = new ChartDataCache(db, deps.onTrackRecordComputed);
  /** What the payment routes and the account page's billing card need; no Stripe client when payments are off. */
  const payments: PaymentRouteDeps = { ...deps, stripe: config.payments.stripe ? createStripeClient(config.payments.stripe) : null };
  /** The plans' prices as Stripe charges them, kept for a few minutes. */
  const planPrices = new PlanPrices(payments.stripe, config.payments.stripe, clock);
  /** What the service sells now: plans with their prices, packs and limits (web/offer.ts). */
  const offer = () => loadOffer({ planPrices, paymentsOn: payments.stripe !== null, packs: config.payments.tokenPacks, limits: config.limits });
  const nodeRequest = (c: WebContext): WebRequest => c.env.incoming;
  /** One per process: every route that hashes a password goes through it. */
  const hashGate = deps.hashGate ?? new HashGate({ ...DEFAULT_HASH_GATE, ...(deps.onPasswordHash ? { onOutcome: deps.onPasswordHash } : {}) });
  const secureCookies = (c: WebContext) => requestIsTls(nodeRequest(c), config.trustProxy) || config.publicBaseUrl.startsWith("https:");

  /** An HTML page; pages are never cached (they carry CSRF tokens and account data). */
  function page(c: WebContext, status: number, body: string, headers: Record<string, string> = {}): Response {
    return c.body(body, status as 200, { ...headers, "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
  }

  /** 303 See Other to a path of this site or a Stripe page (after a POST, the browser follows with a GET). */
  function seeOther(c: WebContext, location: string): Response {
    return c.body(null, 303, { location, "cache-control": "no-store", "content-length": "0" });
  }

  function refuse(c: WebContext, ctx: PageContext): Response {
    return page(c, 403, renderMessagePage(ctx, "Form refused", "This form did not come from this site, or it has expired. Nothing was changed. Go back, reload the page and try again."));
  }

  const ctxOf = (c: WebContext): PageContext => c.get("signed")?.ctx ?? publicCtx;

  async function signedIn(c: WebContext): Promise<Signed | null> {
    const session = await findSession(db, getCookie(c, SESSION_COOKIE), clock());
    if (session === null) return null;
    const summary = await getAccountSummary(db, session.accountId, clock());
    return { session, summary, ctx: { stylesheet, signedIn: { email: summary.email, csrfToken: sessionCsrfToken(session.csrfSecret) } } };
  }

  /** Loads the member of the session cookie (or null) into `c.var.signed`. */
  const session: MiddlewareHandler<WebEnv> = async (c, next) => {
    c.set("signed", await signedIn(c));
    await next();
  };

  const formRefused = (c: WebContext, status: 400 | 413 | 415, message: string) => page(c, status, renderMessagePage(ctxOf(c), "Form refused", `${message} Nothing was changed.`));

  /**
   * The checks every POST passes, in this order, before its handler runs: the Origin header
   * (when sent) is ours, the body is a form of at most MAX_FORM_BYTES in UTF-8. The form is left
   * in `c.var.form`.
   */
  const limit = bodyLimit({ maxSize: MAX_FORM_BYTES, onError: (c) => formRefused(c as WebContext, 413, "The form is too large.") });
  const form: MiddlewareHandler<WebEnv> = async (c, next) => {
    if (!originAllowed(c.req.header("origin"), ownOrigins(nodeRequest(c), config.publicBaseUrl, config.trustProxy))) return refuse(c, ctxOf(c));
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") return formRefused(c, 415, "Forms must be sent as application/x-www-form-urlencoded.");
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

  /** For a signed-in form (after `session` and `form`): a live session and its CSRF token. */
  const signedInForm: MiddlewareHandler<WebEnv> = async (c, next) => {
    const signed = c.get("signed");
    if (signed === null) {
      clearSessionCookie(c);
      return seeOther(c, "/signin");
    }
    if (!sessionCsrfMatches(signed.session.csrfSecret, c.get("form").get(CSRF_FIELD))) return refuse(c, signed.ctx);
    await next();
  };

  /**
   * For the forms that spend money or make a key (after `signedInForm`): the account's email is
   * confirmed. Otherwise 403 with what to do, and nothing changes.
   */
  const verifiedEmail: MiddlewareHandler<WebEnv> = async (c, next) => {
    const signed = c.get("signed")!;
    if (!signed.summary.emailVerified) return refuseUnverified(c, signed);
    await next();
  };

  /** The 403 an unconfirmed account gets where it would pay or make a key. */
  function refuseUnverified(c: WebContext, signed: Signed): Response {
    return page(c, 403, renderMessagePage(signed.ctx, "Confirm your email first", EMAIL_UNVERIFIED_MESSAGE, { href: "/account", text: "Back to your account" }), { "x-error-code": "email_unverified" });
  }

  /** Every cookie of the site: HttpOnly, SameSite=Strict, Path=/; Secure over TLS. */
  const setCookie = (c: WebContext, name: string, value: string, maxAgeSeconds: number) =>
    setHonoCookie(c, name, value, { path: "/", httpOnly: true, sameSite: "Strict", maxAge: Math.max(0, Math.floor(maxAgeSeconds)), secure: secureCookies(c) });

  function setSessionCookie(c: WebContext, token: string): void {
    setCookie(c, SESSION_COOKIE, token, config.sessionTtlMs / 1000);
  }

  function clearSessionCookie(c: WebContext): void {
    setCookie(c, SESSION_COOKIE, "", 0);
  }

  /** The double-submit value of this browser; sets the cookie when it is new. */
  function csrfCookie(c: WebContext): string {
    const existing = getCookie(c, CSRF_COOKIE);
    if (isWellFormedCsrfCookie(existing)) return existing;
    const value = newCsrfCookieValue();
    setCookie(c, CSRF_COOKIE, value, CSRF_COOKIE_MAX_AGE_S);
    return value;
  }

  /** For a GET with no session: sign in first, then come back here. */
  function toSignIn(c: WebContext, path: string): Response {
    // A link from another site (an alert message) arrives without our SameSite=Strict cookie;
    // one same-site reload brings it along (see renderContinuePage).
    if (c.req.header("sec-fetch-site") === "cross-site") return page(c, 200, renderContinuePage(publicCtx, path));
    return seeOther(c, path === "/account" ? "/signin" : `/signin?next=${encodeURIComponent(path)}`);
  }

  /**
   * Runs `work` holding the client address's place in the hashing queue. A refusal comes back
   * as the status, sentence and Retry-After the route's form page shows: 429 while the same
   * address has a password check running, 503 while the queue is full.
   */
  async function withHashPlace<T>(c: WebContext, address: string, work: (hash: <H>(step: () => Promise<H>) => Promise<H>) => Promise<T>): Promise<T | HashBusy> {
    try {
      const ticket = hashGate.enter(address, c.req.raw.signal);
      try {
        return await work((step) => ticket.hash(step));
      } finally {
        ticket.leave();
      }
    } catch (err) {
      if (!(err instanceof HashRefused)) throw err;
      return err.reason === "address_busy"
        ? { busy: true, status: 429, message: "Another sign-in from your network is being checked. Try again in a second.", headers: { "retry-after": "1" } }
        : { busy: true, status: 503, message: "Too many password checks are waiting. Try again in a few seconds.", headers: { "retry-after": "3" } };
    }
  }

  return { deps, assets, publicCtx, chartData, payments, planPrices, offer, nodeRequest, hashGate, withHashPlace, page, seeOther, refuse, signedIn, session, form, signedInForm, verifiedEmail, refuseUnverified, setCookie, setSessionCookie, clearSessionCookie, csrfCookie, toSignIn };
}

/** The hashing queue's refusal, as a route's form page answers it. */
export interface HashBusy {
  readonly busy: true;
  readonly status: 429 | 503;
  readonly message: string;
  readonly headers: Record<string, string>;
}

/** True for withHashPlace's refusal. */
export function isHashBusy(value: unknown): value is HashBusy {
  return typeof value === "object" && value !== null && (value as { busy?: unknown }).busy === true;
}

/** The shared page helpers a route module receives. */
export type PageKit = ReturnType<typeof createPageKit>;

/** Answers 405 with an Allow header for the other methods on a path whose routes are registered. */
export function methodNotAllowed(kit: PageKit, allow: string) {
  return (c: WebContext) => kit.page(c, 405, renderMessagePage(kit.publicCtx, "Method not allowed", `This address accepts ${allow} only.`), { allow });
}
