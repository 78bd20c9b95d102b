/**
 * Payments configuration: a pure parser from an environment-shaped record (only src/config.ts
 * passes process.env to it). Without STRIPE_SECRET_KEY payments are off: no purchase buttons,
 * and POST /webhooks/stripe answers 404.
 */
import { z } from "zod";

/** One entry of the Token pack catalogue. */
export interface TokenPack {
  /** Stable id used in forms and metadata, e.g. "5000-usd". */
  readonly id: string;
  readonly tokens: number;
  /** ISO 4217, lower case as Stripe writes it ("usd"). */
  readonly currency: string;
  /** Price in the currency's minor unit (cents). */
  readonly unitAmount: number;
}

/** Where the `stripe` client sends its requests (STRIPE_API_BASE split into the client's options). */
export interface StripeApiBase {
  readonly host: string;
  readonly port: number;
  readonly protocol: "http" | "https";
  /** The URL as configured, without a trailing slash. */
  readonly url: string;
}

export interface StripeSettings {
  readonly secretKey: string;
  readonly webhookSecret: string;
  readonly apiBase: StripeApiBase;
  /** Recurring Price ids of the plans; a plan without one is not offered. */
  readonly prices: { readonly node: string | null; readonly founding_seat: string | null };
  /** Allowed age (seconds) of a webhook signature's timestamp. */
  readonly webhookToleranceS: number;
}

export interface PaymentsConfig {
  /** null: payments are off. */
  readonly stripe: StripeSettings | null;
  readonly tokenPacks: readonly TokenPack[];
  /** Extra time after a paid period's end before calls are refused (not after a cancellation). */
  readonly subscriptionGraceMs: number;
}

export const DEFAULT_STRIPE_API_BASE = "https://api.stripe.com";
export const DEFAULT_TOKEN_PACKS = "5000:USD:2500,20000:USD:8000";

/** Thrown with a one-line reason; src/config.ts turns it into its ConfigError. */
export class PaymentsConfigError extends Error {
  override name = "PaymentsConfigError";
}

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? null : v.trim()));

const secret = (name: string) =>
  optionalText.refine((v) => v === null || /^\S{8,256}$/.test(v), { message: `${name} must be 8 to 256 characters without spaces` });

const priceId = (name: string) => optionalText.refine((v) => v === null || /^[A-Za-z0-9_]{3,255}$/.test(v), { message: `${name} must be a Stripe Price id such as price_123` });

const wholeNumber = (name: string, fallback: number, min: number, max: number) =>
  optionalText.transform((raw, ctx) => {
    if (raw === null) return fallback;
    const value = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
    if (!(value >= min && value <= max)) {
      ctx.addIssue({ code: "custom", message: `${name} must be a whole number between ${min} and ${max}, got "${raw}"` });
      return z.NEVER;
    }
    return value;
  });

const apiBase = optionalText.transform((raw, ctx): StripeApiBase => {
  const text = raw ?? DEFAULT_STRIPE_API_BASE;
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || (url.pathname !== "/" && url.pathname !== "") || url.search || url.username) {
    ctx.addIssue({ code: "custom", message: `STRIPE_API_BASE must be an http(s) origin such as ${DEFAULT_STRIPE_API_BASE}, got "${text}"` });
    return z.NEVER;
  }
  const protocol = url.protocol === "https:" ? "https" : "http";
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port ? Number(url.port) : protocol === "https" ? 443 : 80, protocol, url: url.origin };
});

/** Parses `Tokens:CURRENCY:minor units` entries separated by commas. */
export function parseTokenPacks(text: string): TokenPack[] {
  const packs: TokenPack[] = [];
  for (const entry of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const match = /^(\d{1,9}):([A-Za-z]{3}):(\d{1,9})$/.exec(entry);
    if (!match) throw new PaymentsConfigError(`TOKEN_PACKS entry "${entry}" must be Tokens:CURRENCY:minor units, e.g. 5000:USD:2500`);
    const tokens = Number(match[1]);
    const unitAmount = Number(match[3]);
    if (tokens < 1 || tokens > 10_000_000) throw new PaymentsConfigError(`TOKEN_PACKS entry "${entry}": Tokens must be between 1 and 10000000`);
    if (unitAmount < 1) throw new PaymentsConfigError(`TOKEN_PACKS entry "${entry}": the price must be at least 1`);
    const currency = match[2]!.toLowerCase();
    const id = `${tokens}-${currency}`;
    if (packs.some((p) => p.id === id)) throw new PaymentsConfigError(`TOKEN_PACKS lists ${tokens} Tokens in ${currency.toUpperCase()} twice`);
    packs.push({ id, tokens, currency, unitAmount });
  }
  return packs;
}

const schema = z.object({
  STRIPE_SECRET_KEY: secret("STRIPE_SECRET_KEY"),
  STRIPE_WEBHOOK_SECRET: secret("STRIPE_WEBHOOK_SECRET"),
  STRIPE_API_BASE: apiBase,
  STRIPE_PRICE_NODE: priceId("STRIPE_PRICE_NODE"),
  STRIPE_PRICE_FOUNDING_SEAT: priceId("STRIPE_PRICE_FOUNDING_SEAT"),
  STRIPE_WEBHOOK_TOLERANCE: wholeNumber("STRIPE_WEBHOOK_TOLERANCE", 300, 1, 3600),
  SUBSCRIPTION_GRACE_HOURS: wholeNumber("SUBSCRIPTION_GRACE_HOURS", 24, 0, 24 * 30),
  TOKEN_PACKS: optionalText,
});

/** Parses and validates the payment variables; throws PaymentsConfigError with a one-line reason. */
export function parsePaymentsConfig(env: Record<string, string | undefined>): PaymentsConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? "payments");
    // Never echo a secret's value back.
    const message = issue.code === "custom" || name.startsWith("STRIPE_SECRET") || name.startsWith("STRIPE_WEBHOOK_SECRET") ? issue.message : `${name}: ${issue.message}`;
    throw new PaymentsConfigError(message);
  }
  const v = parsed.data;
  if (v.STRIPE_SECRET_KEY !== null && v.STRIPE_WEBHOOK_SECRET === null) {
    throw new PaymentsConfigError("STRIPE_WEBHOOK_SECRET is required with STRIPE_SECRET_KEY: purchases are credited only from signed webhooks");
  }
  const tokenPacks = parseTokenPacks(v.TOKEN_PACKS ?? DEFAULT_TOKEN_PACKS);
  return Object.freeze({
    stripe:
      v.STRIPE_SECRET_KEY === null
        ? null
        : Object.freeze({
            secretKey: v.STRIPE_SECRET_KEY,
            webhookSecret: v.STRIPE_WEBHOOK_SECRET!,
            apiBase: v.STRIPE_API_BASE,
            prices: Object.freeze({ node: v.STRIPE_PRICE_NODE, founding_seat: v.STRIPE_PRICE_FOUNDING_SEAT }),
            webhookToleranceS: v.STRIPE_WEBHOOK_TOLERANCE,
          }),
    tokenPacks: Object.freeze(tokenPacks.map((p) => Object.freeze(p))),
    subscriptionGraceMs: v.SUBSCRIPTION_GRACE_HOURS * 3_600_000,
  });
}
