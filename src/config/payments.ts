/** Stripe, the Token pack catalogue and the subscription grace (docs/payments.md). */
import { ConfigError, fail, optionalText, type Parsed, type Rule, wholeNumber } from "./parse.ts";

const DEFAULT_STRIPE_API_BASE = "https://api.stripe.com";
const DEFAULT_TOKEN_PACKS = "5000:USD:2500,20000:USD:8000";

/** Where the `stripe` client sends its requests: STRIPE_API_BASE split into the client's options. */
const stripeApiBase = optionalText.transform((raw, ctx) => {
  const text = raw ?? DEFAULT_STRIPE_API_BASE;
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (
    url === null ||
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    (url.pathname !== "/" && url.pathname !== "") ||
    url.search ||
    url.username
  ) {
    return fail(ctx, `must be an http(s) origin such as ${DEFAULT_STRIPE_API_BASE}, got "${text}"`);
  }
  const protocol: "http" | "https" = url.protocol === "https:" ? "https" : "http";
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : protocol === "https" ? 443 : 80,
    protocol,
    url: url.origin,
  };
});

/** A Stripe secret (API key or webhook signing secret); the message never quotes the value. */
const stripeSecret = optionalText.refine(
  (v) => v === undefined || /^\S{8,256}$/.test(v),
  "must be 8 to 256 characters without spaces",
);

/** A Stripe Price id; undefined when unset (the plan is not offered). */
const stripePriceId = optionalText.refine(
  (v) => v === undefined || /^[A-Za-z0-9_]{3,255}$/.test(v),
  "must be a Stripe Price id such as price_123",
);

/** Parses TOKEN_PACKS: `Tokens:CURRENCY:minor units` entries separated by commas; throws ConfigError. */
export function parseTokenPacks(
  text: string,
): { readonly id: string; readonly tokens: number; readonly currency: string; readonly unitAmount: number }[] {
  const packs: { id: string; tokens: number; currency: string; unitAmount: number }[] = [];
  for (const entry of text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const match = /^(\d{1,9}):([A-Za-z]{3}):(\d{1,9})$/.exec(entry);
    if (!match) throw new ConfigError(`entry "${entry}" must be Tokens:CURRENCY:minor units, e.g. 5000:USD:2500`);
    const tokens = Number(match[1]);
    const unitAmount = Number(match[3]);
    if (tokens < 1 || tokens > 10_000_000)
      throw new ConfigError(`entry "${entry}": Tokens must be between 1 and 10000000`);
    if (unitAmount < 1) throw new ConfigError(`entry "${entry}": the price must be at least 1`);
    const currency = match[2]!.toLowerCase();
    const id = `${tokens}-${currency}`;
    if (packs.some((p) => p.id === id))
      throw new ConfigError(`lists ${tokens} Tokens in ${currency.toUpperCase()} twice`);
    packs.push({ id, tokens, currency, unitAmount });
  }
  return packs;
}

const tokenPacks = optionalText.transform((raw, ctx) => {
  try {
    return parseTokenPacks(raw ?? DEFAULT_TOKEN_PACKS).map((p) => Object.freeze(p));
  } catch (err) {
    if (err instanceof ConfigError) return fail(ctx, err.message);
    throw err;
  }
});

export const paymentsEnv = {
  STRIPE_SECRET_KEY: stripeSecret,
  STRIPE_WEBHOOK_SECRET: stripeSecret,
  STRIPE_API_BASE: stripeApiBase,
  STRIPE_PRICE_NODE: stripePriceId,
  STRIPE_PRICE_FOUNDING_SEAT: stripePriceId,
  STRIPE_WEBHOOK_TOLERANCE: wholeNumber(300, 1, 3600),
  SUBSCRIPTION_GRACE_HOURS: wholeNumber(24, 0, 24 * 30),
  TOKEN_PACKS: tokenPacks,
};

type PaymentsEnv = Parsed<typeof paymentsEnv>;

export const paymentsRules: Rule<PaymentsEnv>[] = [
  {
    holds: (env) => env.STRIPE_SECRET_KEY === undefined || env.STRIPE_WEBHOOK_SECRET !== undefined,
    message:
      "STRIPE_WEBHOOK_SECRET is required with STRIPE_SECRET_KEY: " +
      "Tokens and plans are granted only from signed webhooks",
  },
];

/** The payments' settings. */
export function paymentsConfig(env: PaymentsEnv) {
  return Object.freeze({
    /** null (STRIPE_SECRET_KEY unset): payments are off, no buttons, POST /webhooks/stripe answers 404. */
    stripe:
      env.STRIPE_SECRET_KEY === undefined
        ? null
        : Object.freeze({
            secretKey: env.STRIPE_SECRET_KEY,
            webhookSecret: env.STRIPE_WEBHOOK_SECRET!,
            apiBase: Object.freeze(env.STRIPE_API_BASE),
            /** Recurring Price ids of the plans; a plan without one is not offered. */
            prices: Object.freeze({
              node: env.STRIPE_PRICE_NODE ?? null,
              founding_seat: env.STRIPE_PRICE_FOUNDING_SEAT ?? null,
            }),
            /** Allowed age (seconds) of a webhook signature's timestamp. */
            webhookToleranceS: env.STRIPE_WEBHOOK_TOLERANCE,
          }),
    /**
     * The pack catalogue; ids such as "5000-usd", currencies lower case as Stripe writes them,
     * prices in minor units.
     */
    tokenPacks: Object.freeze(env.TOKEN_PACKS),
    /** Extra time after a paid period's end before calls are refused (not after a cancellation). */
    subscriptionGraceMs: env.SUBSCRIPTION_GRACE_HOURS * 3_600_000,
  });
}
