/**
 * A local fake of the parts of Stripe's API this service calls: a real HTTP server the
 * `stripe` client reaches through STRIPE_API_BASE. It answers POST /v1/customers,
 * POST /v1/checkout/sessions and POST /v1/billing_portal/sessions, and (for `signals doctor`)
 * GET /v1/prices/<id> and GET /v1/webhook_endpoints, in Stripe's documented object shapes, records every request
 * (form-encoded bodies as flat `metadata[account_id]` keys, and the headers), and serves a stand-in hosted checkout
 * page at each session's url.
 * `fail(n)` makes the next n API calls answer 500 (an outage).
 *
 * Webhook events in Stripe's shapes and signed as Stripe signs them are built by the helpers
 * at the end (signedEvent, the *Object builders).
 */

import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";

export const FAKE_STRIPE_SECRET_KEY = "sk_test_fake_0123456789abcdef";
export const FAKE_WEBHOOK_SECRET = "whsec_fake_0123456789abcdef0123456789";
export const PRICE_NODE = "price_node_monthly";
export const PRICE_FOUNDING_SEAT = "price_founding_seat_monthly";

export interface StripeCall {
  readonly method: string;
  readonly path: string;
  /** Form fields as sent (`metadata[account_id]`, `line_items[0][price]`, …). */
  readonly form: Record<string, string>;
  readonly headers: Record<string, string | string[] | undefined>;
}

export interface CheckoutSessionRecord {
  readonly id: string;
  readonly url: string;
  readonly form: Record<string, string>;
  readonly customer: string | null;
  readonly mode: string;
  readonly metadata: Record<string, string>;
  readonly amountTotal: number | null;
  readonly currency: string | null;
}

export interface FakeStripe {
  readonly apiBase: string;
  readonly calls: StripeCall[];
  readonly checkoutSessions: CheckoutSessionRecord[];
  readonly portalSessions: { id: string; url: string; customer: string; returnUrl: string }[];
  readonly customers: { id: string; email: string; metadata: Record<string, string> }[];
  /** The account's webhook endpoints as GET /v1/webhook_endpoints lists them (tests add and edit them). */
  readonly webhookEndpoints: { url: string; enabled_events: string[]; status: "enabled" | "disabled" }[];
  /** The next n API calls answer 500. */
  fail(n: number): void;
  /** Env for a server that uses this fake. */
  env(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

const newId = (prefix: string) => `${prefix}_test_${randomBytes(12).toString("base64url")}`;

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function metadataOf(form: Record<string, string>, prefix = "metadata"): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(form)) {
    const m = new RegExp(`^${prefix.replace(/[[\]]/g, "\\$&")}\\[([^\\]]+)\\]$`).exec(k);
    if (m) out[m[1]!] = v;
  }
  return out;
}

/** Starts the fake on a loopback port. */
export async function startFakeStripe(): Promise<FakeStripe> {
  const calls: StripeCall[] = [];
  const checkoutSessions: CheckoutSessionRecord[] = [];
  const portalSessions: FakeStripe["portalSessions"] = [];
  const customers: FakeStripe["customers"] = [];
  const webhookEndpoints: FakeStripe["webhookEndpoints"] = [];
  const idempotent = new Map<string, unknown>();
  let failures = 0;
  let base = "";

  const send = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "request-id": newId("req") });
    res.end(text);
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    if (req.method === "GET" && /^\/(c\/pay|p\/session)\//.test(url.pathname)) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      const page = '<!doctype html><title>Stripe test checkout</title><h1 id="fake-stripe">Stripe test page</h1>';
      res.end(`${page}<p>${url.pathname}</p>`);
      return;
    }
    const raw = await readBody(req);
    const form = Object.fromEntries(new URLSearchParams(raw));
    calls.push({ method: req.method ?? "", path: url.pathname, form, headers: req.headers });
    const auth = req.headers.authorization ?? "";
    if (auth !== `Bearer ${FAKE_STRIPE_SECRET_KEY}`) {
      return send(res, 401, { error: { type: "invalid_request_error", message: "Invalid API Key provided." } });
    }
    if (failures > 0) {
      failures--;
      return send(res, 500, { error: { type: "api_error", message: "An unknown error occurred." } });
    }
    const key = req.headers["idempotency-key"];
    const cacheKey = typeof key === "string" ? `${url.pathname}:${key}` : null;
    if (cacheKey && idempotent.has(cacheKey)) return send(res, 200, idempotent.get(cacheKey));
    const created = Math.floor(Date.now() / 1000);
    let body: unknown;
    if (req.method === "POST" && url.pathname === "/v1/customers") {
      const customer = {
        id: newId("cus"),
        object: "customer",
        email: form.email ?? null,
        metadata: metadataOf(form),
        created,
        livemode: false,
      };
      customers.push({ id: customer.id, email: form.email ?? "", metadata: customer.metadata });
      body = customer;
    } else if (req.method === "POST" && url.pathname === "/v1/checkout/sessions") {
      const id = newId("cs");
      const mode = form.mode ?? "payment";
      const amountTotal = form["line_items[0][price_data][unit_amount]"]
        ? Number(form["line_items[0][price_data][unit_amount]"])
        : null;
      const currency = form["line_items[0][price_data][currency]"] ?? null;
      const session = {
        id,
        object: "checkout.session",
        mode,
        status: "open",
        payment_status: "unpaid",
        url: `${base}/c/pay/${id}`,
        customer: form.customer ?? null,
        client_reference_id: form.client_reference_id ?? null,
        metadata: metadataOf(form),
        success_url: form.success_url ?? null,
        cancel_url: form.cancel_url ?? null,
        amount_total: amountTotal,
        currency,
        payment_intent: null,
        subscription: null,
        created,
        expires_at: created + 24 * 3600,
        livemode: false,
      };
      checkoutSessions.push({
        id,
        url: session.url,
        form,
        customer: session.customer,
        mode,
        metadata: session.metadata,
        amountTotal,
        currency,
      });
      body = session;
    } else if (req.method === "POST" && url.pathname === "/v1/billing_portal/sessions") {
      const id = newId("bps");
      const session = {
        id,
        object: "billing_portal.session",
        customer: form.customer,
        return_url: form.return_url ?? null,
        url: `${base}/p/session/${id}`,
        created,
        livemode: false,
      };
      portalSessions.push({ id, url: session.url, customer: form.customer ?? "", returnUrl: form.return_url ?? "" });
      body = session;
    } else if (req.method === "GET" && url.pathname.startsWith("/v1/prices/")) {
      const id = decodeURIComponent(url.pathname.slice("/v1/prices/".length));
      const amounts: Record<string, number> = { [PRICE_NODE]: 4900, [PRICE_FOUNDING_SEAT]: 2900 };
      if (amounts[id] === undefined)
        return send(res, 404, {
          error: { type: "invalid_request_error", code: "resource_missing", message: `No such price: '${id}'` },
        });
      body = {
        id,
        object: "price",
        active: true,
        currency: "usd",
        unit_amount: amounts[id],
        recurring: { interval: "month", interval_count: 1 },
        type: "recurring",
        livemode: false,
        created,
      };
    } else if (req.method === "GET" && url.pathname === "/v1/webhook_endpoints") {
      body = {
        object: "list",
        url: "/v1/webhook_endpoints",
        has_more: false,
        data: webhookEndpoints.map((e, i) => ({
          id: `we_test_${i}`,
          object: "webhook_endpoint",
          api_version: null,
          livemode: false,
          created,
          ...e,
        })),
      };
    } else {
      return send(res, 404, {
        error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${url.pathname}).` },
      });
    }
    if (cacheKey) idempotent.set(cacheKey, body);
    send(res, 200, body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    apiBase: base,
    calls,
    checkoutSessions,
    portalSessions,
    customers,
    webhookEndpoints,
    fail(n) {
      failures = n;
    },
    env(extra = {}) {
      return {
        STRIPE_SECRET_KEY: FAKE_STRIPE_SECRET_KEY,
        STRIPE_WEBHOOK_SECRET: FAKE_WEBHOOK_SECRET,
        STRIPE_API_BASE: base,
        STRIPE_PRICE_NODE: PRICE_NODE,
        STRIPE_PRICE_FOUNDING_SEAT: PRICE_FOUNDING_SEAT,
        TOKEN_PACKS: "5000:USD:2500,20000:USD:8000",
        ...extra,
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---- webhook events, in Stripe's shapes, signed as Stripe signs them ---------------------------

const signer = new Stripe(FAKE_STRIPE_SECRET_KEY);

export interface SignedDelivery {
  readonly eventId: string;
  readonly payload: string;
  readonly signature: string;
}

/** An Event object around `object`, its JSON and its Stripe-Signature header (timestamp in seconds). */
export function signedEvent(
  type: string,
  object: Record<string, unknown>,
  options: { timestampS: number; createdS?: number; eventId?: string; secret?: string },
): SignedDelivery {
  const eventId = options.eventId ?? newId("evt");
  const payload = JSON.stringify({
    id: eventId,
    object: "event",
    api_version: Stripe.API_VERSION,
    created: options.createdS ?? options.timestampS,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  });
  const signature = signer.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? FAKE_WEBHOOK_SECRET,
    timestamp: options.timestampS,
  });
  return { eventId, payload, signature };
}

/** A completed Checkout Session (payment mode) for a session the fake created. */
export function completedPackSession(
  session: CheckoutSessionRecord,
  options: { paymentStatus?: "paid" | "unpaid"; paymentIntent?: string } = {},
): Record<string, unknown> {
  return {
    id: session.id,
    object: "checkout.session",
    mode: "payment",
    status: "complete",
    payment_status: options.paymentStatus ?? "paid",
    customer: session.customer,
    client_reference_id: session.form.client_reference_id ?? null,
    metadata: session.metadata,
    amount_total: session.amountTotal,
    currency: session.currency,
    payment_intent: options.paymentIntent ?? newId("pi"),
    subscription: null,
    url: null,
    livemode: false,
  };
}

/** A completed Checkout Session in subscription mode. */
export function completedSubscriptionSession(
  session: CheckoutSessionRecord,
  subscriptionId: string,
): Record<string, unknown> {
  return {
    id: session.id,
    object: "checkout.session",
    mode: "subscription",
    status: "complete",
    payment_status: "paid",
    customer: session.customer,
    client_reference_id: session.form.client_reference_id ?? null,
    metadata: session.metadata,
    amount_total: 9900,
    currency: "usd",
    payment_intent: null,
    subscription: subscriptionId,
    invoice: newId("in"),
    url: null,
    livemode: false,
  };
}

/** A paid subscription invoice (API 2025-03-31 and later: the subscription in `parent`). */
export function paidInvoice(input: {
  customer: string;
  subscription: string;
  price: string;
  periodStartS: number;
  periodEndS: number;
  paidAtS: number;
  metadata?: Record<string, string>;
  billingReason?: string;
  /** Lines before the plan's own line (e.g. a negative proration for the old plan). */
  extraLines?: { price: string; amount: number }[];
}): Record<string, unknown> {
  const id = newId("in");
  const line = (price: string, amount: number) => ({
    id: newId("il"),
    object: "line_item",
    amount,
    currency: "usd",
    period: { start: input.periodStartS, end: input.periodEndS },
    pricing: {
      type: "price_details",
      price_details: { price, product: "prod_test_signals" },
      unit_amount_decimal: String(amount),
    },
    parent: {
      type: "subscription_item_details",
      subscription_item_details: { subscription: input.subscription, proration: amount < 0 },
    },
    quantity: 1,
  });
  return {
    id,
    object: "invoice",
    customer: input.customer,
    status: "paid",
    paid: true,
    amount_due: 9900,
    amount_paid: 9900,
    amount_remaining: 0,
    currency: "usd",
    billing_reason: input.billingReason ?? "subscription_cycle",
    created: input.periodStartS,
    period_start: input.periodStartS,
    period_end: input.periodStartS,
    status_transitions: { paid_at: input.paidAtS, finalized_at: input.periodStartS },
    parent: {
      type: "subscription_details",
      subscription_details: { subscription: input.subscription, metadata: input.metadata ?? {} },
      quote_details: null,
    },
    lines: {
      object: "list",
      has_more: false,
      data: [...(input.extraLines ?? []).map((l) => line(l.price, l.amount)), line(input.price, 9900)],
    },
    livemode: false,
  };
}

/** A Subscription object (items carry the period since API 2025-03-31). */
export function subscriptionObject(input: {
  id: string;
  customer: string;
  price: string;
  status: string;
  periodStartS: number;
  periodEndS: number;
  createdS: number;
  endedAtS?: number | null;
  canceledAtS?: number | null;
  metadata?: Record<string, string>;
}): Record<string, unknown> {
  return {
    id: input.id,
    object: "subscription",
    customer: input.customer,
    status: input.status,
    created: input.createdS,
    start_date: input.createdS,
    cancel_at_period_end: false,
    canceled_at: input.canceledAtS ?? null,
    ended_at: input.endedAtS ?? null,
    metadata: input.metadata ?? {},
    items: {
      object: "list",
      has_more: false,
      data: [
        {
          id: newId("si"),
          object: "subscription_item",
          price: { id: input.price, object: "price", recurring: { interval: "month" } },
          quantity: 1,
          current_period_start: input.periodStartS,
          current_period_end: input.periodEndS,
        },
      ],
    },
    livemode: false,
  };
}

/** A refunded Charge (amount_refunded is cumulative, as Stripe reports it). */
export function refundedCharge(input: {
  paymentIntent: string;
  amount: number;
  amountRefunded: number;
  currency?: string;
}): Record<string, unknown> {
  return {
    id: newId("ch"),
    object: "charge",
    amount: input.amount,
    amount_refunded: input.amountRefunded,
    refunded: input.amountRefunded >= input.amount,
    currency: input.currency ?? "usd",
    payment_intent: input.paymentIntent,
    status: "succeeded",
    livemode: false,
  };
}

/** A new Dispute on a charge. */
export function disputeObject(input: {
  paymentIntent: string;
  charge?: string;
  amount: number;
}): Record<string, unknown> {
  return {
    id: newId("du"),
    object: "dispute",
    amount: input.amount,
    currency: "usd",
    charge: input.charge ?? newId("ch"),
    payment_intent: input.paymentIntent,
    reason: "fraudulent",
    status: "needs_response",
    livemode: false,
  };
}

/** POSTs a delivery to the service's webhook route, as Stripe does. */
export async function deliver(
  baseUrl: string,
  delivery: { payload: string; signature: string | null },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {
    "content-type": "application/json; charset=utf-8",
    "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
  };
  if (delivery.signature !== null) headers["stripe-signature"] = delivery.signature;
  const res = await fetch(`${baseUrl}/webhooks/stripe`, { method: "POST", headers, body: delivery.payload });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: res.status, body };
}
