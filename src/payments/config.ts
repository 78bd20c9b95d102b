/**
 * The payments part of the configuration, as the payments code names it. The variables are
 * parsed once, in src/config.ts's schema; without STRIPE_SECRET_KEY payments are off (no
 * purchase buttons, and POST /webhooks/stripe answers 404).
 */
import type { PaymentsConfig } from "../config.ts";

export type { PaymentsConfig } from "../config.ts";
/** Stripe's settings when payments are on. */
export type StripeSettings = NonNullable<PaymentsConfig["stripe"]>;
/** Where the `stripe` client sends its requests (STRIPE_API_BASE split into the client's options). */
export type StripeApiBase = StripeSettings["apiBase"];
/** One entry of the Token pack catalogue. */
export type TokenPack = PaymentsConfig["tokenPacks"][number];
