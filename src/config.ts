/**
 * The only module that reads process.env. Everything else receives a frozen Config.
 * A bad value stops the start with a one-line reason (ConfigError).
 */
import path from "node:path";
import { parsePaymentsConfig, PaymentsConfigError, type PaymentsConfig } from "./payments/config.ts";

export interface Limits {
  /** Charged calls per account per MYT day. */
  readonly dailyCap: number;
  /** Tokens granted on the 1st of each MYT month (grant bucket reset to this). */
  readonly monthlyGrant: number;
  /** Low-balance notice threshold, percent of the monthly grant. */
  readonly lowBalancePct: number;
  /** Symbols accepted per call; the rest are ignored. */
  readonly maxSymbols: number;
}

export interface AlertConfig {
  /** Base URL of the Telegram Bot API (or a compatible server). */
  readonly telegramApiBase: string;
  /** Bot token; null turns delivery off (outbox rows wait, then expire after giveUpAfterMs). */
  readonly telegramBotToken: string | null;
  /** A candle whose close is older than this (ms) when it arrives is history: no alert. */
  readonly maxDelayMs: number;
  /** A message still undelivered this long (ms) after it was written is recorded as failed. */
  readonly giveUpAfterMs: number;
  /** One sendMessage call may take this long (ms) before it counts as failed. */
  readonly sendTimeoutMs: number;
  /** First retry delay (ms); doubles per attempt up to retryMaxMs, with jitter. */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** Run the delivery worker in this process. */
  readonly worker: boolean;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly internalHost: string;
  readonly internalPort: number;
  /** Bearer token of the internal listener; null means "generate one at start". */
  readonly internalToken: string | null;
  /** postgres:// URL; null selects embedded PGlite in dataDir. */
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  readonly dbPoolSize: number;
  readonly limits: Limits;
  /** Create a demo node account on first start (default: on for the embedded database). */
  readonly demoAccount: boolean;
  readonly logLevel: string;
  /** Largest request header block accepted, bytes. */
  readonly maxHeaderBytes: number;
  /** A request's header block must arrive within this (ms), else 408 / the connection closes. */
  readonly headersTimeoutMs: number;
  /** A whole request (headers and body) must arrive within this (ms). */
  readonly requestTimeoutMs: number;
  /** A connection (or HTTP/2 session) with no traffic for this long (ms) is closed. */
  readonly idleTimeoutMs: number;
  /** A coin whose feed has been silent longer than this (ms) is answered `stale`. */
  readonly staleAfterMs: number;
  /** Run the built-in demo feed (seeded random walk) for a few coins. */
  readonly demoFeed: boolean;
  /** Failed API keys allowed per caller address per failedKeyWindowMs before 429. */
  readonly failedKeyLimit: number;
  readonly failedKeyWindowMs: number;
  /** Where members reach the web pages (links in alerts), without a trailing slash. */
  readonly publicBaseUrl: string;
  readonly alerts: AlertConfig;
  /** How long a web sign-in lasts (ms). */
  readonly sessionTtlMs: number;
  /**
   * A proxy in front of the public listener sets X-Forwarded-For / X-Forwarded-Proto: use them
   * for the sign-in throttle's client address and for Secure cookies.
   */
  readonly trustProxy: boolean;
  /** Free-endpoint calls (movers, derivatives, news, macro, fundamentals) per API key per minute. */
  readonly freeRateLimit: number;
  /** Stripe, the Token pack catalogue and the subscription grace (src/payments/config.ts). */
  readonly payments: PaymentsConfig;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolVar(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return fallback;
  if (["1", "true", "yes", "on"].includes(raw)) return true;
  if (["0", "false", "no", "off"].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function hostVar(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^[A-Za-z0-9.:\-\[\]]+$/.test(raw)) throw new ConfigError(`${name} is not a host name or address: "${raw}"`);
  return raw;
}

function urlVar(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}

function paymentsVar(env: Env): PaymentsConfig {
  try {
    return parsePaymentsConfig(env);
  } catch (err) {
    if (err instanceof PaymentsConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

/** Parses and validates the environment once; throws ConfigError with a one-line reason. */
export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.DATABASE_URL?.trim() || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must start with postgres:// or postgresql://");
  }
  const internalToken = env.INTERNAL_TOKEN?.trim() || null;
  if (internalToken !== null && internalToken.length < 16) {
    throw new ConfigError("INTERNAL_TOKEN must be at least 16 characters");
  }
  const port = intVar(env, "PORT", 8080, 0, 65535);
  const internalPort = intVar(env, "INTERNAL_PORT", 8081, 0, 65535);
  if (port !== 0 && port === internalPort) throw new ConfigError("PORT and INTERNAL_PORT must differ");
  const telegramBotToken = env.TELEGRAM_BOT_TOKEN?.trim() || null;
  if (telegramBotToken !== null && !/^[A-Za-z0-9:_-]{8,200}$/.test(telegramBotToken)) {
    throw new ConfigError("TELEGRAM_BOT_TOKEN must look like 123456:ABC-DEF... (letters, digits, ':', '_', '-')");
  }
  const host = hostVar(env, "HOST", "127.0.0.1");
  const linkHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const retryBaseMs = intVar(env, "ALERT_RETRY_BASE_MS", 1000, 1, 3_600_000);
  const logLevel = env.LOG_LEVEL?.trim() || "info";
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent`);
  }
  return Object.freeze({
    host,
    port,
    internalHost: hostVar(env, "INTERNAL_HOST", "127.0.0.1"),
    internalPort,
    internalToken,
    databaseUrl,
    dataDir: path.resolve(env.DATA_DIR?.trim() || ".data"),
    dbPoolSize: intVar(env, "DB_POOL_SIZE", 10, 1, 500),
    limits: Object.freeze({
      dailyCap: intVar(env, "DAILY_CAP", 2000, 1, 10_000_000),
      monthlyGrant: intVar(env, "MONTHLY_GRANT", 10_000, 0, 1_000_000_000),
      lowBalancePct: intVar(env, "LOW_BALANCE_PCT", 15, 0, 100),
      maxSymbols: intVar(env, "MAX_SYMBOLS", 8, 1, 100),
    }),
    demoAccount: boolVar(env, "DEMO_ACCOUNT", databaseUrl === null),
    logLevel,
    maxHeaderBytes: intVar(env, "MAX_HEADER_BYTES", 16 * 1024, 1024, 1024 * 1024),
    headersTimeoutMs: intVar(env, "HEADERS_TIMEOUT", 10, 1, 600) * 1000,
    requestTimeoutMs: intVar(env, "REQUEST_TIMEOUT", 30, 1, 3600) * 1000,
    idleTimeoutMs: intVar(env, "IDLE_TIMEOUT", 65, 1, 24 * 3600) * 1000,
    staleAfterMs: intVar(env, "STALE_AFTER", 900, 1, 365 * 24 * 3600) * 1000,
    demoFeed: boolVar(env, "DEMO_FEED", databaseUrl === null),
    failedKeyLimit: intVar(env, "FAILED_KEY_LIMIT", 100, 1, 1_000_000),
    failedKeyWindowMs: intVar(env, "FAILED_KEY_WINDOW", 60, 1, 24 * 3600) * 1000,
    publicBaseUrl: urlVar(env, "PUBLIC_BASE_URL", `http://${linkHost}:${port}`),
    alerts: Object.freeze({
      telegramApiBase: urlVar(env, "TELEGRAM_API_BASE", "https://api.telegram.org"),
      telegramBotToken,
      maxDelayMs: intVar(env, "ALERT_MAX_DELAY", 300, 0, 7 * 24 * 3600) * 1000,
      giveUpAfterMs: intVar(env, "ALERT_GIVE_UP_AFTER", 3600, 1, 30 * 24 * 3600) * 1000,
      sendTimeoutMs: intVar(env, "ALERT_SEND_TIMEOUT_MS", 10_000, 10, 600_000),
      retryBaseMs,
      retryMaxMs: Math.max(retryBaseMs, intVar(env, "ALERT_RETRY_MAX_MS", 300_000, 1, 24 * 3_600_000)),
      worker: boolVar(env, "ALERT_WORKER", true),
    }),
    sessionTtlMs: intVar(env, "SESSION_TTL_HOURS", 168, 1, 24 * 365) * 3_600_000,
    trustProxy: boolVar(env, "TRUST_PROXY", false),
    freeRateLimit: intVar(env, "FREE_RATE_LIMIT", 60, 1, 1_000_000),
    payments: paymentsVar(env),
  });
}
