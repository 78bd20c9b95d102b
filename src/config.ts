/**
 * The only module that reads process.env. Everything else receives a frozen Config.
 * A bad value stops the start with a one-line reason (ConfigError).
 */
import path from "node:path";

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
  /** A coin whose feed has been silent longer than this (ms) is answered `stale`. */
  readonly staleAfterMs: number;
  /** Run the built-in demo feed (seeded random walk) for a few coins. */
  readonly demoFeed: boolean;
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
  const logLevel = env.LOG_LEVEL?.trim() || "info";
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent`);
  }
  return Object.freeze({
    host: hostVar(env, "HOST", "127.0.0.1"),
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
    staleAfterMs: intVar(env, "STALE_AFTER", 900, 1, 365 * 24 * 3600) * 1000,
    demoFeed: boolVar(env, "DEMO_FEED", databaseUrl === null),
  });
}
