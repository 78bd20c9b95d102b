/**
 * What every page route shares, built once per app over its dependencies: the assets, the
 * computed chart data, what the service sells, the cookies, the session and form guards, and
 * the few ways a page answers. The route modules in routes/ take it as their only argument.
 */
import type { Context } from "hono";
import { DEFAULT_HASH_GATE, HashGate } from "../accounts/sign-in/hash-gate.ts";
import { PlanPrices } from "../payments/plan-prices.ts";
import { createStripeClient } from "../payments/stripe-client.ts";
import { ChartDataCache } from "../track-record/chart-data.ts";
import { LiveRecordCache } from "../track-record/live-record-data.ts";
import { loadAssets } from "./assets.ts";
import { type QueuedHash, withHashPlace } from "./attempt-refusals.ts";
import { type PageContext, renderMessagePage } from "./auth-pages.ts";
import { createCookies } from "./cookies.ts";
import { createFormGuards, createSessionGuards } from "./form-guards.ts";
import type { WebRequest } from "./http.ts";
import { loadOffer } from "./offer.ts";
import type { PaymentRouteDeps } from "./payment-actions.ts";
import { page, type Refusal, refuse, seeOther } from "./responses.ts";
import type { WebContext, WebDeps } from "./web-env.ts";

export { SESSION_COOKIE } from "./cookies.ts";
export { EMAIL_UNVERIFIED_MESSAGE, MAX_FORM_BYTES } from "./form-guards.ts";
export { pageSecurityHeaders } from "./security-headers.ts";
export type { Signed, WakeupHub, WebContext, WebDeps, WebEnv } from "./web-env.ts";

/** The payments side of the kit: the Stripe client (none when payments are off), the plans' prices, the offer. */
function createSales(deps: WebDeps) {
  const { config, clock } = deps;
  const payments: PaymentRouteDeps = {
    ...deps,
    stripe: config.payments.stripe ? createStripeClient(config.payments.stripe) : null,
  };
  /** The plans' prices as Stripe charges them, kept for a few minutes. */
  const planPrices = new PlanPrices(payments.stripe, config.payments.stripe, clock);
  /** What the service sells now: plans with their prices, packs and limits (web/offer.ts). */
  const offer = () =>
    loadOffer({
      planPrices,
      paymentsOn: payments.stripe !== null,
      packs: config.payments.tokenPacks,
      limits: config.limits,
    });
  return { payments, planPrices, offer };
}

/** Builds the shared page helpers over the web dependencies (assets are read once, here). */
export function createPageKit(deps: WebDeps) {
  const { config, db, clock } = deps;
  const assets = loadAssets();
  const publicCtx: PageContext = { stylesheet: assets.url("app.css"), signedIn: null };
  const nodeRequest = (c: Context): WebRequest => c.env.incoming;
  const cookies = createCookies(config, nodeRequest);
  const guardDeps = { config, db, clock, publicCtx, cookies, nodeRequest };
  const sessions = createSessionGuards(guardDeps);
  /** One per process: every route that hashes a password goes through it. */
  const hashGate =
    deps.hashGate ??
    new HashGate({ ...DEFAULT_HASH_GATE, ...(deps.onPasswordHash ? { onOutcome: deps.onPasswordHash } : {}) });
  return {
    deps,
    assets,
    publicCtx,
    /** One computed copy per coin and timeframe a chart page has shown. */
    chartData: new ChartDataCache(db, deps.onTrackRecordComputed),
    /** The live record's inputs, one copy for the landing page's headline and /track-record. */
    liveRecord: new LiveRecordCache(db),
    ...createSales(deps),
    nodeRequest,
    ...cookies,
    ...sessions,
    ...createFormGuards(guardDeps, sessions),
    page,
    seeOther,
    refuse,
    /** Runs `work` holding the client address's place in the password hashing queue, or answers its Refusal. */
    withHashPlace: <T>(c: WebContext, address: string, work: (hash: QueuedHash) => Promise<T>): Promise<T | Refusal> =>
      withHashPlace(hashGate, address, c.req.raw.signal, work),
  };
}

/** The shared page helpers a route module receives. */
export type PageKit = ReturnType<typeof createPageKit>;

/** Answers 405 with an Allow header for the other methods on a path whose routes are registered. */
export function methodNotAllowed(kit: PageKit, allow: string) {
  return (c: WebContext) =>
    kit.page(c, 405, renderMessagePage(kit.publicCtx, "Method not allowed", `This address accepts ${allow} only.`), {
      allow,
    });
}
