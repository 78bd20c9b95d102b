/**
 * The `stripe` client, pointed at STRIPE_API_BASE (Stripe itself, or a local fake in tests).
 */
import Stripe from "stripe";
import type { StripeSettings } from "./config.ts";

/** Builds a client for the configured API base; it makes no request until used. */
export function createStripeClient(settings: StripeSettings): Stripe {
  return new Stripe(settings.secretKey, {
    host: settings.apiBase.host,
    port: settings.apiBase.port,
    protocol: settings.apiBase.protocol,
    // A member waits on the redirect: fail within seconds; one retry (with the same
    // idempotency key, which the client adds to every POST) covers a dropped connection.
    timeout: 10_000,
    maxNetworkRetries: 1,
    telemetry: false,
  });
}
