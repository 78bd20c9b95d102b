/**
 * The `stripe` client, pointed at STRIPE_API_BASE (Stripe itself, or a local fake in tests).
 * The package (about 30 MiB of a process's memory once imported) is loaded on the first
 * payment action, not at start: most requests never touch payments.
 */
import type Stripe from "stripe";
import type { StripeSettings } from "./config.ts";

/** The client, loaded and built on first use (the same one every later call). */
export type StripeClient = () => Promise<Stripe>;

/** A client for the configured API base; nothing is loaded and no request is made until used. */
export function createStripeClient(settings: StripeSettings): StripeClient {
  let client: Promise<Stripe> | null = null;
  return () =>
    (client ??= import("stripe")
      .then(
        ({ default: StripeLibrary }) =>
          new StripeLibrary(settings.secretKey, {
            host: settings.apiBase.host,
            port: settings.apiBase.port,
            protocol: settings.apiBase.protocol,
            // A member waits on the redirect: fail within seconds; one retry (with the same
            // idempotency key, which the client adds to every POST) covers a dropped connection.
            timeout: 10_000,
            maxNetworkRetries: 1,
            telemetry: false,
          }),
      )
      .catch((err: unknown) => {
        // A failed load is not kept: the next payment action tries again instead of failing until a restart.
        client = null;
        throw err;
      }));
}
