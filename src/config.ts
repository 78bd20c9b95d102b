/**
 * The only module that reads process.env. Everything else receives a frozen Config.
 * One zod schema states each variable once (its parsing, default and bounds); the Config type
 * is inferred from it. A bad value stops the start with a one-line reason (ConfigError) that
 * names the variable.
 */
import { availableParallelism } from "node:os";
import path from "node:path";
import { z } from "zod";
import { parseFeedConfig, type FeedConfig } from "./feeder/feed-config.ts";
import { parseContextSourcesConfig, type ContextSourcesConfig } from "./feeder/sources/config.ts";

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

function fail(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
}

/** The variable's trimmed value, or undefined when it is unset or blank. */
const optionalText = z
  .string()
  .optional()
  .transform((raw) => raw?.trim() || undefined);

/** A whole number in [min, max]; the default when unset or blank. */
function wholeNumber(fallback: number, min: number, max: number) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === "") return fallback;
      if (!/^\d+$/.test(raw.trim())) return fail(ctx, `must be a whole number, got "${raw}"`);
      const value = Number(raw.trim());
      if (value < min || value > max) return fail(ctx, `must be between ${min} and ${max}, got ${value}`);
      return value;
    });
}

/** true/false (also 1/0, yes/no, on/off); undefined when unset, for defaults that depend on others. */
const flag = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    const value = raw?.trim().toLowerCase();
    if (value === undefined || value === "") return undefined;
    if (["1", "true", "yes", "on"].includes(value)) return true;
    if (["0", "false", "no", "off"].includes(value)) return false;
    return fail(ctx, `must be true or false, got "${raw}"`);
  });

/** A host name or address; the default when unset. */
const hostName = (fallback: string) =>
  optionalText.transform((raw, ctx) => (raw === undefined ? fallback : /^[A-Za-z0-9.:\-[\]]+$/.test(raw) ? raw : fail(ctx, `is not a host name or address: "${raw}"`)));

/** An http(s) URL without its trailing slashes; undefined when unset. */
const httpUrl = optionalText.transform((raw, ctx) => {
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail(ctx, `must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail(ctx, `must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
});

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
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || (url.pathname !== "/" && url.pathname !== "") || url.search || url.username) {
    return fail(ctx, `must be an http(s) origin such as ${DEFAULT_STRIPE_API_BASE}, got "${text}"`);
  }
  const protocol: "http" | "https" = url.protocol === "https:" ? "https" : "http";
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port ? Number(url.port) : protocol === "https" ? 443 : 80, protocol, url: url.origin };
});

/** A Stripe secret (API key or webhook signing secret); the message never quotes the value. */
const stripeSecret = optionalText.refine((v) => v === undefined || /^\S{8,256}$/.test(v), "must be 8 to 256 characters without spaces");

/** A Stripe Price id; undefined when unset (the plan is not offered). */
const stripePriceId = optionalText.refine((v) => v === undefined || /^[A-Za-z0-9_]{3,255}$/.test(v), "must be a Stripe Price id such as price_123");

/** Parses TOKEN_PACKS: `Tokens:CURRENCY:minor units` entries separated by commas; throws ConfigError. */
export function parseTokenPacks(text: string): { readonly id: string; readonly tokens: number; readonly currency: string; readonly unitAmount: number }[] {
  const packs: { id: string; tokens: number; currency: string; unitAmount: number }[] = [];
  for (const entry of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const match = /^(\d{1,9}):([A-Za-z]{3}):(\d{1,9})$/.exec(entry);
    if (!match) throw new ConfigError(`entry "${entry}" must be Tokens:CURRENCY:minor units, e.g. 5000:USD:2500`);
    const tokens = Number(match[1]);
    const unitAmount = Number(match[3]);
    if (tokens < 1 || tokens > 10_000_000) throw new ConfigError(`entry "${entry}": Tokens must be between 1 and 10000000`);
    if (unitAmount < 1) throw new ConfigError(`entry "${entry}": the price must be at least 1`);
    const currency = match[2]!.toLowerCase();
    const id = `${tokens}-${currency}`;
    if (packs.some((p) => p.id === id)) throw new ConfigError(`lists ${tokens} Tokens in ${currency.toUpperCase()} twice`);
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

/** An smtp:// or smtps:// URL (credentials inside); the message never quotes the value. */
const smtpUrl = optionalText.refine((raw) => {
  if (raw === undefined) return true;
  try {
    const url = new URL(raw);
    return (url.protocol === "smtp:" || url.protocol === "smtps:") && url.hostname !== "";
  } catch {
    return false;
  }
}, "must be an smtp:// or smtps:// URL such as smtp://user:password@mail.example:587");

/** A sender such as `Signals <no-reply@signals.example>`: one line with an address in it. */
const mailFrom = optionalText.refine((v) => v === undefined || (/^[^\r\n]{3,320}$/.test(v) && /[^\s@<>]+@[^\s@<>]+/.test(v)), "must be a sender address such as Signals <no-reply@signals.example>");

/** How the bot's updates (a member's `/start <token>`) reach the service (docs/alerts.md). */
export const TELEGRAM_UPDATE_MODES = ["polling", "webhook", "off"] as const;
export type TelegramUpdateMode = (typeof TELEGRAM_UPDATE_MODES)[number];

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** The environment variables, each parsed once (README.md lists what each one means). */
const envSchema = z.object({
  HOST: hostName("127.0.0.1"),
  PORT: wholeNumber(8080, 0, 65535),
  INTERNAL_HOST: hostName("127.0.0.1"),
  INTERNAL_PORT: wholeNumber(8081, 0, 65535),
  INTERNAL_TOKEN: optionalText.refine((v) => v === undefined || v.length >= 16, "must be at least 16 characters"),
  DATABASE_URL: optionalText.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), "must start with postgres:// or postgresql://"),
  DATA_DIR: optionalText,
  DB_POOL_SIZE: wholeNumber(10, 1, 500),
  /** Server worker processes on one port; unset: the available cores on Postgres, 1 on PGlite. */
  WORKERS: optionalText.transform((raw, ctx) => {
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 64) return fail(ctx, `must be a whole number between 1 and 64, got "${raw}"`);
    return Number(raw);
  }),
  /**
   * Set by the primary process for its workers (server/cluster.ts), not by operators: "lead"
   * runs the once-per-machine duties, "follower" only the public listener.
   */
  SIGNALS_WORKER_ROLE: optionalText.refine((v) => v === undefined || v === "lead" || v === "follower", 'must be "lead" or "follower"'),
  DAILY_CAP: wholeNumber(2000, 1, 10_000_000),
  MONTHLY_GRANT: wholeNumber(10_000, 0, 1_000_000_000),
  LOW_BALANCE_PCT: wholeNumber(15, 0, 100),
  MAX_SYMBOLS: wholeNumber(8, 1, 100),
  DEMO_ACCOUNT: flag,
  LOG_LEVEL: optionalText.transform((v, ctx) => {
    const level = v ?? "info";
    return LOG_LEVELS.includes(level) ? level : fail(ctx, `must be one of ${LOG_LEVELS.join(", ")}`);
  }),
  MAX_HEADER_BYTES: wholeNumber(16 * 1024, 1024, 1024 * 1024),
  HEADERS_TIMEOUT: wholeNumber(10, 1, 600),
  REQUEST_TIMEOUT: wholeNumber(30, 1, 3600),
  IDLE_TIMEOUT: wholeNumber(65, 1, 24 * 3600),
  STREAM_MAX_LIFE: wholeNumber(1800, 1, 7 * 24 * 3600),
  STREAMS_PER_ADDRESS: wholeNumber(200, 1, 100_000),
  GOAWAY_GRACE: wholeNumber(10, 1, 3600),
  STALE_AFTER: wholeNumber(900, 1, 365 * 24 * 3600),
  CATCH_UP_MS: wholeNumber(1000, 1, 60_000),
  DEMO_FEED: flag,
  FAILED_KEY_LIMIT: wholeNumber(100, 1, 1_000_000),
  FAILED_KEY_WINDOW: wholeNumber(60, 1, 24 * 3600),
  PUBLIC_BASE_URL: httpUrl,
  TELEGRAM_API_BASE: httpUrl,
  TELEGRAM_BOT_TOKEN: optionalText.refine(
    (v) => v === undefined || /^[A-Za-z0-9:_-]{8,200}$/.test(v),
    "must look like 123456:ABC-DEF... (letters, digits, ':', '_', '-')",
  ),
  TELEGRAM_BOT_USERNAME: optionalText.transform((raw, ctx) => {
    const name = raw?.replace(/^@/, "");
    return name === undefined || /^[A-Za-z][A-Za-z0-9_]{4,31}$/.test(name) ? name : fail(ctx, `must be the bot's username, e.g. SignalsAlertsBot, got "${raw}"`);
  }),
  TELEGRAM_UPDATES: optionalText.transform((raw, ctx) => {
    const mode = raw?.toLowerCase();
    return mode === undefined || (TELEGRAM_UPDATE_MODES as readonly string[]).includes(mode) ? (mode as TelegramUpdateMode | undefined) : fail(ctx, `must be one of ${TELEGRAM_UPDATE_MODES.join(", ")}, got "${raw}"`);
  }),
  // Telegram allows 1-256 of these characters; a guessable short secret would defeat the check.
  TELEGRAM_WEBHOOK_SECRET: optionalText.refine((v) => v === undefined || /^[A-Za-z0-9_-]{16,256}$/.test(v), "must be 16 to 256 letters, digits, '_' or '-'"),
  ALERT_MAX_DELAY: wholeNumber(300, 0, 7 * 24 * 3600),
  ALERT_GIVE_UP_AFTER: wholeNumber(3600, 1, 30 * 24 * 3600),
  ALERT_SEND_TIMEOUT_MS: wholeNumber(10_000, 10, 600_000),
  ALERT_RETRY_BASE_MS: wholeNumber(1000, 1, 3_600_000),
  ALERT_RETRY_MAX_MS: wholeNumber(300_000, 1, 24 * 3_600_000),
  ALERT_WORKER: flag,
  SESSION_TTL_HOURS: wholeNumber(168, 1, 24 * 365),
  TRUST_PROXY: flag,
  FREE_RATE_LIMIT: wholeNumber(60, 1, 1_000_000),
  PAGE_VIEWS_PER_MINUTE: wholeNumber(20, 1, 1_000_000),
  PAGE_VIEWS_PER_DAY: wholeNumber(1000, 1, 100_000_000),
  KEY_LAST_USED_FLUSH_MS: wholeNumber(60_000, 10, 3_600_000),
  STRIPE_SECRET_KEY: stripeSecret,
  STRIPE_WEBHOOK_SECRET: stripeSecret,
  STRIPE_API_BASE: stripeApiBase,
  STRIPE_PRICE_NODE: stripePriceId,
  STRIPE_PRICE_FOUNDING_SEAT: stripePriceId,
  STRIPE_WEBHOOK_TOLERANCE: wholeNumber(300, 1, 3600),
  SUBSCRIPTION_GRACE_HOURS: wholeNumber(24, 0, 24 * 30),
  TOKEN_PACKS: tokenPacks,
  SMTP_URL: smtpUrl,
  MAIL_FROM: mailFrom,
});

/** The environment → the Config the program receives (times in ms, defaults that depend on other variables). */
const configSchema = envSchema
  .refine((env) => env.PORT === 0 || env.PORT !== env.INTERNAL_PORT, { message: "PORT and INTERNAL_PORT must differ" })
  .refine((env) => env.STRIPE_SECRET_KEY === undefined || env.STRIPE_WEBHOOK_SECRET !== undefined, {
    message: "STRIPE_WEBHOOK_SECRET is required with STRIPE_SECRET_KEY: Tokens and plans are granted only from signed webhooks",
  })
  .refine((env) => env.SMTP_URL === undefined || env.MAIL_FROM !== undefined, {
    message: "MAIL_FROM is required with SMTP_URL: password reset mails need a sender",
  })
  .refine((env) => env.WORKERS === undefined || env.WORKERS === 1 || env.DATABASE_URL !== undefined, {
    message: "WORKERS above 1 needs DATABASE_URL: the embedded database (PGlite) is opened by one process only",
  })
  .refine((env) => env.TELEGRAM_UPDATES === undefined || env.TELEGRAM_UPDATES === "off" || (env.TELEGRAM_BOT_TOKEN !== undefined && env.TELEGRAM_BOT_USERNAME !== undefined), {
    message: "TELEGRAM_UPDATES=polling or webhook needs TELEGRAM_BOT_TOKEN and TELEGRAM_BOT_USERNAME",
  })
  .refine((env) => env.TELEGRAM_UPDATES !== "webhook" || env.TELEGRAM_WEBHOOK_SECRET !== undefined, {
    message: "TELEGRAM_UPDATES=webhook needs TELEGRAM_WEBHOOK_SECRET: the webhook accepts only requests carrying it",
  })
  .transform((env) => {
    const databaseUrl = env.DATABASE_URL ?? null;
    const linkHost = env.HOST === "0.0.0.0" || env.HOST === "::" ? "127.0.0.1" : env.HOST.includes(":") ? `[${env.HOST}]` : env.HOST;
    return {
      host: env.HOST,
      port: env.PORT,
      internalHost: env.INTERNAL_HOST,
      internalPort: env.INTERNAL_PORT,
      /** Bearer token of the internal listener; null means "generate one at start". */
      internalToken: env.INTERNAL_TOKEN ?? null,
      /** postgres:// URL; null selects embedded PGlite in dataDir. */
      databaseUrl,
      dataDir: path.resolve(env.DATA_DIR ?? ".data"),
      dbPoolSize: env.DB_POOL_SIZE,
      /** Server processes sharing the listeners (server/cluster.ts); 1 runs everything in this process. */
      workers: env.WORKERS ?? (databaseUrl === null ? 1 : availableParallelism()),
      /** This process's part when it is one of several workers; null when it is the only server process. */
      workerRole: (env.SIGNALS_WORKER_ROLE ?? null) as "lead" | "follower" | null,
      limits: Object.freeze({
        /** Charged calls per account per MYT day. */
        dailyCap: env.DAILY_CAP,
        /** Tokens granted on the 1st of each MYT month (grant bucket reset to this). */
        monthlyGrant: env.MONTHLY_GRANT,
        /** Low-balance notice threshold, percent of the monthly grant. */
        lowBalancePct: env.LOW_BALANCE_PCT,
        /** Symbols accepted per call; the rest are ignored. */
        maxSymbols: env.MAX_SYMBOLS,
      }),
      /** Create a demo node account on first start (default: on for the embedded database). */
      demoAccount: env.DEMO_ACCOUNT ?? databaseUrl === null,
      logLevel: env.LOG_LEVEL,
      /** Largest request header block accepted, bytes. */
      maxHeaderBytes: env.MAX_HEADER_BYTES,
      /** A request's header block must arrive within this (ms), else 408 / the connection closes. */
      headersTimeoutMs: env.HEADERS_TIMEOUT * 1000,
      /** A whole request (headers and body) must arrive within this (ms). */
      requestTimeoutMs: env.REQUEST_TIMEOUT * 1000,
      /** A connection (or HTTP/2 session) with no traffic for this long (ms) is closed. */
      idleTimeoutMs: env.IDLE_TIMEOUT * 1000,
      /** An HTTP/2 stream on the public listener is ended after this long (ms), whatever it does. */
      streamMaxLifeMs: env.STREAM_MAX_LIFE * 1000,
      /** HTTP/2 streams one client address may hold open at once on the public listener. */
      streamsPerAddress: env.STREAMS_PER_ADDRESS,
      /** An HTTP/2 session told to go away (GOAWAY) that has not closed after this long (ms) is destroyed. */
      goawayGraceMs: env.GOAWAY_GRACE * 1000,
      /** A coin whose feed has been silent longer than this (ms) is answered `stale`. */
      staleAfterMs: env.STALE_AFTER * 1000,
      /**
       * How long a paid call waits for this process to catch up with a market version the
       * store already holds (ms); past it the call is answered 503 and not charged.
       */
      catchUpMs: env.CATCH_UP_MS,
      /** Run the built-in demo feed (seeded random walk) for a few coins. */
      demoFeed: env.DEMO_FEED ?? databaseUrl === null,
      /** Failed API keys allowed per caller address per failedKeyWindowMs before 429. */
      failedKeyLimit: env.FAILED_KEY_LIMIT,
      failedKeyWindowMs: env.FAILED_KEY_WINDOW * 1000,
      /** Where members reach the web pages (links in alerts), without a trailing slash. */
      publicBaseUrl: env.PUBLIC_BASE_URL ?? `http://${linkHost}:${env.PORT}`,
      alerts: Object.freeze({
        /** Base URL of the Telegram Bot API (or a compatible server). */
        telegramApiBase: env.TELEGRAM_API_BASE ?? "https://api.telegram.org",
        /** Bot token; null turns delivery off (outbox rows wait, then expire after giveUpAfterMs). */
        telegramBotToken: env.TELEGRAM_BOT_TOKEN ?? null,
        /** A candle whose close is older than this (ms) when it arrives is history: no alert. */
        maxDelayMs: env.ALERT_MAX_DELAY * 1000,
        /** A message still undelivered this long (ms) after it was written is recorded as failed. */
        giveUpAfterMs: env.ALERT_GIVE_UP_AFTER * 1000,
        /** One sendMessage call may take this long (ms) before it counts as failed. */
        sendTimeoutMs: env.ALERT_SEND_TIMEOUT_MS,
        /** First retry delay (ms); doubles per attempt up to retryMaxMs, with jitter. */
        retryBaseMs: env.ALERT_RETRY_BASE_MS,
        retryMaxMs: Math.max(env.ALERT_RETRY_BASE_MS, env.ALERT_RETRY_MAX_MS),
        /** Run the delivery worker in this process (and the getUpdates poller, when polling). */
        worker: env.ALERT_WORKER ?? true,
        /** The bot's username, for the t.me connect links; null: members type a chat id. */
        telegramBotUsername: env.TELEGRAM_BOT_USERNAME ?? null,
        /**
         * How `/start <token>` messages arrive: getUpdates long polling, POST /webhooks/telegram,
         * or not at all (no Connect button). Default: polling when the bot token and username are set.
         */
        telegramUpdates: (env.TELEGRAM_UPDATES ?? (env.TELEGRAM_BOT_TOKEN !== undefined && env.TELEGRAM_BOT_USERNAME !== undefined ? "polling" : "off")) as TelegramUpdateMode,
        /** The secret Telegram sends in X-Telegram-Bot-Api-Secret-Token (set with setWebhook's secret_token). */
        telegramWebhookSecret: env.TELEGRAM_WEBHOOK_SECRET ?? null,
      }),
      /** How long a web sign-in lasts (ms). */
      sessionTtlMs: env.SESSION_TTL_HOURS * 3_600_000,
      /**
       * A proxy in front of the public listener sets X-Forwarded-For / X-Forwarded-Proto: use them
       * for the sign-in throttle's client address and for Secure cookies.
       */
      trustProxy: env.TRUST_PROXY ?? false,
      /** Free-endpoint calls (movers, derivatives, news, macro, fundamentals) per API key per minute. */
      freeRateLimit: env.FREE_RATE_LIMIT,
      /**
       * Views of pages showing the current signal (a paid plan's chart pages): per web session
       * per minute, and per account per MYT day over all its sessions (accounts/page-views.ts).
       */
      pageViews: Object.freeze({ perSessionPerMinute: env.PAGE_VIEWS_PER_MINUTE, perAccountPerDay: env.PAGE_VIEWS_PER_DAY }),
      /**
       * Outgoing mail (password reset links, docs/accounts.md); null (SMTP_URL unset): no
       * "Forgot password?" link, the reset pages answer 404, the operator's CLI links remain.
       */
      mail: env.SMTP_URL === undefined ? null : Object.freeze({ smtpUrl: env.SMTP_URL, from: env.MAIL_FROM! }),
      /** API keys' "last used" times are written at most this often (ms), batched (accounts/key-last-used.ts). */
      keyLastUsedFlushMs: env.KEY_LAST_USED_FLUSH_MS,
      /** Stripe, the Token pack catalogue and the subscription grace (docs/payments.md). */
      payments: Object.freeze({
        /** null (STRIPE_SECRET_KEY unset): payments are off, no buttons, POST /webhooks/stripe answers 404. */
        stripe:
          env.STRIPE_SECRET_KEY === undefined
            ? null
            : Object.freeze({
                secretKey: env.STRIPE_SECRET_KEY,
                webhookSecret: env.STRIPE_WEBHOOK_SECRET!,
                apiBase: Object.freeze(env.STRIPE_API_BASE),
                /** Recurring Price ids of the plans; a plan without one is not offered. */
                prices: Object.freeze({ node: env.STRIPE_PRICE_NODE ?? null, founding_seat: env.STRIPE_PRICE_FOUNDING_SEAT ?? null }),
                /** Allowed age (seconds) of a webhook signature's timestamp. */
                webhookToleranceS: env.STRIPE_WEBHOOK_TOLERANCE,
              }),
        /** The pack catalogue; ids such as "5000-usd", currencies lower case as Stripe writes them, prices in minor units. */
        tokenPacks: Object.freeze(env.TOKEN_PACKS),
        /** Extra time after a paid period's end before calls are refused (not after a cancellation). */
        subscriptionGraceMs: env.SUBSCRIPTION_GRACE_HOURS * 3_600_000,
      }),
    };
  });

/** The validated, frozen configuration (inferred from the schema). */
export type Config = Readonly<z.output<typeof configSchema>>;
/** The Token limits of the billing rules. */
export type Limits = Config["limits"];
/** Message delivery settings. */
export type AlertConfig = Config["alerts"];
/** Stripe, the pack catalogue and the grace period. */
export type PaymentsConfig = Config["payments"];

/** Parses and validates the environment once; throws ConfigError with a one-line reason. */
export function loadConfig(env: Env = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = issue.path[0];
    throw new ConfigError(typeof variable === "string" ? `${variable} ${issue.message}` : issue.message);
  }
  return Object.freeze(parsed.data);
}

/** The `signals feed` configuration from its flags and this process's environment. */
export const loadFeedConfig = (argv: string[]): FeedConfig => parseFeedConfig(process.env, argv);
/** The feeder's context sources' variables (NEWS_FEEDS, COINGECKO_*, FRED_* …) from process.env. */
export const loadContextSourcesConfig = (): ContextSourcesConfig => parseContextSourcesConfig(process.env);
