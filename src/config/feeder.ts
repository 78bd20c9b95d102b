/**
 * Configuration of `signals feed`: flags win over environment variables (FEED_*, with
 * INTERNAL_TOKEN, DATA_DIR and LOG_LEVEL). Durations are whole or decimal seconds; any
 * positive value set explicitly is honoured. A bad one throws ConfigError with one line.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { commaList, isWellFormedSymbol } from "../market/symbols.ts";
import { TIMEFRAME_MS, TIMEFRAMES } from "../market/timeframes.ts";
import { ConfigError, type Env, trimmedOrUndefined, urlWithout } from "./parse.ts";

/**
 * What the feeder can feed; `--datasets` picks among them. The default (`candles,derivatives`)
 * needs nothing but an exchange; the context datasets (news, fundamentals, macro) are opt-in
 * because news needs NEWS_FEEDS and macro FRED_API_KEY (docs/feeder.md).
 */
export const FEED_DATASETS = ["candles", "derivatives", "news", "fundamentals", "macro"] as const;
export type FeedDataset = (typeof FEED_DATASETS)[number];

export interface FeedConfig {
  readonly exchange: string;
  readonly quote: string;
  readonly symbols: readonly string[];
  readonly tf: string;
  readonly tfMs: number;
  /** Internal listener of the server, without a trailing slash. */
  readonly server: string;
  /** Bearer token; null: read the token file the server writes in dataDir. */
  readonly internalToken: string | null;
  readonly dataDir: string;
  readonly restUrl: string | null;
  readonly wsUrl: string | null;
  /** Candles fetched for a coin the service has never seen. */
  readonly historyCandles: number;
  readonly silenceMs: number;
  readonly auditEveryMs: number;
  readonly derivativesEveryMs: number;
  readonly failoverMs: number;
  /** Loopback port of /metrics and /healthz; 0 lets the system choose. */
  readonly metricsPort: number;
  readonly datasets: readonly FeedDataset[];
  readonly logLevel: string;
}

const FLAGS = {
  exchange: { type: "string" },
  quote: { type: "string" },
  symbols: { type: "string" },
  tf: { type: "string" },
  server: { type: "string" },
  datasets: { type: "string" },
  json: { type: "boolean" },
} as const;

/** The variable each setting reads when its flag (FLAGS, the same name) is not given. */
const VARIABLES = {
  exchange: "FEED_EXCHANGE",
  quote: "FEED_QUOTE",
  symbols: "FEED_SYMBOLS",
  tf: "FEED_TF",
  server: "FEED_SERVER",
  internalToken: "INTERNAL_TOKEN",
  dataDir: "DATA_DIR",
  restUrl: "FEED_REST_URL",
  wsUrl: "FEED_WS_URL",
  historyCandles: "FEED_HISTORY",
  silenceMs: "FEED_SILENCE",
  auditEveryMs: "FEED_AUDIT_EVERY",
  derivativesEveryMs: "FEED_DERIVATIVES_EVERY",
  failoverMs: "FEED_FAILOVER",
  metricsPort: "FEED_METRICS_PORT",
  datasets: "FEED_DATASETS",
  logLevel: "LOG_LEVEL",
} as const;

/** Every environment variable `signals feed` reads. */
export const FEED_VARIABLES: readonly string[] = Object.values(VARIABLES);

const code = (what: string) =>
  z.string().trim().toUpperCase().refine(isWellFormedSymbol, `${what} must be 1-15 letters or digits`);
const seconds = (name: string) =>
  z.coerce
    .number({ error: `${name} must be a number of seconds` })
    .refine((v) => Number.isFinite(v) && v > 0, `${name} must be a positive number of seconds`)
    .transform((v) => Math.round(v * 1000))
    .optional();
const url = (name: string, schemes: string[]) =>
  z
    .string()
    .trim()
    .refine(
      (v) => urlWithout(v, schemes) !== null,
      `${name} must be a ${schemes.map((s) => s.replace(":", "")).join(" or ")} URL`,
    )
    .transform((v) => urlWithout(v, schemes)!);
/** A comma list, each item passed through `normalise`, then checked by `items`; undefined when unset. */
const listOf = <T extends z.ZodType<unknown, string[] | undefined>>(normalise: (item: string) => string, items: T) =>
  z
    .string()
    .optional()
    .transform((raw) => (raw === undefined ? undefined : commaList(raw, Infinity, normalise)))
    .pipe(items);

const schema = z.object({
  exchange: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9]{2,32}$/, "--exchange must be a ccxt exchange id such as binance")
    .default("binance"),
  quote: code("--quote").default("USDT"),
  symbols: listOf(
    (s) => s.toUpperCase(),
    z
      .array(code("each of --symbols"))
      .min(1, "--symbols needs at least one base code")
      .max(500, "--symbols takes at most 500 coins")
      .default(["BTC", "ETH", "SOL", "BNB", "XRP"]),
  ),
  // The service's base timeframes; 1m and 5m are not stored by the service (docs/feeder.md).
  tf: z.enum(TIMEFRAMES, { error: `--tf must be one of ${TIMEFRAMES.join(", ")}` }).default("15m"),
  server: url("--server", ["http:", "https:"]).default("http://127.0.0.1:8081"),
  internalToken: z.string().trim().min(1).optional(),
  dataDir: z.string().trim().min(1).default(".data"),
  restUrl: url("FEED_REST_URL", ["http:", "https:"]).optional(),
  wsUrl: url("FEED_WS_URL", ["ws:", "wss:"]).optional(),
  historyCandles: z.coerce
    .number()
    .int("FEED_HISTORY must be a whole number of candles")
    .min(1, "FEED_HISTORY must be at least 1")
    .max(100_000, "FEED_HISTORY must be at most 100000")
    .default(1500),
  silenceMs: seconds("FEED_SILENCE"),
  auditEveryMs: seconds("FEED_AUDIT_EVERY"),
  derivativesEveryMs: seconds("FEED_DERIVATIVES_EVERY"),
  failoverMs: seconds("FEED_FAILOVER"),
  metricsPort: z.coerce
    .number()
    .int("FEED_METRICS_PORT must be a port number")
    .min(0)
    .max(65_535, "FEED_METRICS_PORT must be a port number")
    .default(9464),
  datasets: listOf(
    (s) => s.toLowerCase(),
    z
      .array(z.enum(FEED_DATASETS, { error: `--datasets takes ${FEED_DATASETS.join(", ")}` }))
      .min(1, `--datasets needs at least one of ${FEED_DATASETS.join(", ")}`)
      .default(["candles", "derivatives"]),
  ),
  logLevel: z
    .string()
    .toLowerCase()
    .pipe(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]))
    .default("info"),
});

/** Parses the feeder's flags (`argv` after `feed`) and environment; throws ConfigError with one line. */
export function parseFeedConfig(env: Env, argv: string[]): FeedConfig {
  let flags: Partial<Record<keyof typeof FLAGS, string | boolean>>;
  try {
    flags = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const given = (setting: keyof typeof VARIABLES) =>
    setting in flags && typeof flags[setting as keyof typeof FLAGS] === "string"
      ? (flags[setting as keyof typeof FLAGS] as string)
      : env[VARIABLES[setting]];
  const input = Object.fromEntries(
    Object.keys(VARIABLES).map((setting) => [setting, trimmedOrUndefined(given(setting as keyof typeof VARIABLES))]),
  );
  const result = schema.safeParse(input);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new ConfigError(issue.message);
  }
  const v = result.data;
  const tfMs = TIMEFRAME_MS[v.tf];
  return Object.freeze({
    exchange: v.exchange,
    quote: v.quote,
    symbols: Object.freeze(v.symbols),
    tf: v.tf,
    tfMs,
    server: v.server,
    internalToken: v.internalToken ?? null,
    dataDir: path.resolve(v.dataDir),
    restUrl: v.restUrl ?? null,
    wsUrl: v.wsUrl ?? null,
    historyCandles: v.historyCandles,
    // Twice the timeframe, at least 90 s: a quiet market still sends a forming update within that.
    silenceMs: v.silenceMs ?? Math.max(2 * tfMs, 90_000),
    auditEveryMs: v.auditEveryMs ?? 15 * 60_000,
    derivativesEveryMs: v.derivativesEveryMs ?? 5 * 60_000,
    failoverMs: v.failoverMs ?? 30_000,
    metricsPort: v.metricsPort,
    datasets: Object.freeze([...new Set(v.datasets)]),
    logLevel: v.logLevel,
  });
}
