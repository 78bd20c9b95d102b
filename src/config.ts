/**
 * The only module that reads process.env. Everything else receives a frozen Config.
 * Each section of src/config/ states its variables once (parsing, default, bounds) with the
 * helpers of config/parse.ts; this file joins them into one schema, applies the rules that
 * span sections, and infers the Config type. A bad value stops the start with a one-line
 * reason (ConfigError) that names the variable.
 */
import { z } from "zod";
import { alertsConfig, alertsEnv, alertsRules } from "./config/alerts.ts";
import { databaseConfig, databaseEnv } from "./config/database.ts";
import { FEED_VARIABLES, type FeedConfig, parseFeedConfig } from "./config/feeder.ts";
import { limitsConfig, limitsEnv } from "./config/limits.ts";
import { marketConfig, marketEnv } from "./config/market.ts";
import { membersConfig, membersEnv, membersRules } from "./config/members.ts";
import { ConfigError, type Env, type Parsed, type Rule } from "./config/parse.ts";
import { paymentsConfig, paymentsEnv, paymentsRules } from "./config/payments.ts";
import { serverConfig, serverEnv, serverRules } from "./config/server.ts";
import { CONTEXT_SOURCE_VARIABLES, type ContextSourcesConfig, parseContextSourcesConfig } from "./config/sources.ts";

export { TELEGRAM_UPDATE_MODES, type TelegramUpdateMode } from "./config/alerts.ts";
export { ConfigError } from "./config/parse.ts";
export { parseTokenPacks } from "./config/payments.ts";

/** The environment variables, each parsed once (README.md lists what each one means). */
const envShape = {
  ...serverEnv,
  ...databaseEnv,
  ...limitsEnv,
  ...marketEnv,
  ...alertsEnv,
  ...membersEnv,
  ...paymentsEnv,
};
type ParsedEnv = Parsed<typeof envShape>;

const rules: Rule<ParsedEnv>[] = [
  ...serverRules,
  ...paymentsRules,
  ...membersRules,
  {
    holds: (env) => env.WORKERS === undefined || env.WORKERS === 1 || env.DATABASE_URL !== undefined,
    message: "WORKERS above 1 needs DATABASE_URL: the embedded database (PGlite) is opened by one process only",
  },
  ...alertsRules,
];

/** The environment → the Config the program receives (times in ms, defaults that depend on other variables). */
const configSchema = z
  .object(envShape)
  .superRefine((env, ctx) => {
    for (const rule of rules) if (!rule.holds(env)) ctx.addIssue({ code: "custom", message: rule.message });
  })
  .transform((env) => {
    const database = databaseConfig(env);
    return {
      ...serverConfig(env, database.databaseUrl),
      ...database,
      ...limitsConfig(env),
      ...marketConfig(env, database.databaseUrl),
      alerts: alertsConfig(env),
      ...membersConfig(env),
      /** Stripe, the Token pack catalogue and the subscription grace (docs/payments.md). */
      payments: paymentsConfig(env),
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

/** Every environment variable the program reads: the server's, `signals feed`'s and its context sources'. */
export const ENVIRONMENT_VARIABLES: readonly string[] = Object.freeze(
  [...new Set([...Object.keys(envShape), ...FEED_VARIABLES, ...CONTEXT_SOURCE_VARIABLES])].sort(),
);

/** The `signals feed` configuration from its flags and this process's environment. */
export const loadFeedConfig = (argv: string[], env: Env = process.env): FeedConfig => parseFeedConfig(env, argv);
/** The feeder's context sources' variables (NEWS_FEEDS, COINGECKO_*, FRED_* …) from this process's environment. */
export const loadContextSourcesConfig = (env: Env = process.env): ContextSourcesConfig =>
  parseContextSourcesConfig(env);
