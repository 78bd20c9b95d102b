/**
 * The feeder's context sources (news feeds, CoinGecko fundamentals, FRED macro series):
 * NEWS_*, COINGECKO_*, FUNDAMENTALS_*, FRED_*, MACRO_*, SOURCE_TIMEOUT. A bad value throws
 * ConfigError with a one-line reason naming the variable.
 */
import { z } from "zod";
import { isWellFormedSymbol } from "../market/symbols.ts";
import { COINGECKO_IDS } from "./coingecko-ids.ts";
import { ConfigError, type Env, optionalText, textList, urlText, urlWithout } from "./parse.ts";

export type CoinGeckoPlan = "public" | "demo" | "pro";

export interface NewsConfig {
  /** Feed URLs (RSS, Atom or JSON Feed). */
  readonly feeds: readonly string[];
  /** How often each feed is fetched at most (ms); never below 5 minutes. */
  readonly refreshMs: number;
}

export interface FundamentalsConfig {
  readonly apiKey: string | null;
  /** public: no key; demo and pro use different hosts and header names. */
  readonly plan: CoinGeckoPlan;
  /** Root URL, e.g. https://api.coingecko.com/api/v3 (no trailing slash). */
  readonly apiBase: string;
  /** Base codes to fetch. */
  readonly symbols: readonly string[];
  /** Base code → CoinGecko id, the built-in table overridden by COINGECKO_IDS. */
  readonly ids: Readonly<Record<string, string>>;
  readonly refreshMs: number;
}

export interface MacroConfig {
  readonly apiKey: string | null;
  /** Root URL, e.g. https://api.stlouisfed.org/fred (no trailing slash). */
  readonly apiBase: string;
  /** FRED series ids; stored under these names. */
  readonly series: readonly string[];
  readonly refreshMs: number;
  /** Observations re-read on every refresh, so revisions inside this window are applied. */
  readonly historyDays: number;
}

export interface ContextSourcesConfig {
  readonly news: NewsConfig;
  readonly fundamentals: FundamentalsConfig;
  readonly macro: MacroConfig;
  /** One HTTP request to a provider may take this long (ms). */
  readonly timeoutMs: number;
}

/** The FRED series fetched when MACRO_SERIES is not set (documented in docs/context-data.md). */
export const DEFAULT_MACRO_SERIES = ["DTWEXBGS", "DFF", "DGS10", "CPIAUCSL"] as const;

const COINGECKO_HOSTS: Record<Exclude<CoinGeckoPlan, "public">, string> = {
  demo: "api.coingecko.com",
  pro: "pro-api.coingecko.com",
};

const HTTP = ["http:", "https:"];
const URL_MESSAGE = "must be an http(s) URL";
const optionalUrl = urlText(HTTP, () => URL_MESSAGE);
/** A whole number of seconds in [min, max] (the default when unset or blank), in ms. */
const seconds = (fallback: number, min: number, max: number) =>
  optionalText.pipe(
    z
      .string()
      .regex(/^\d+$/, "must be a whole number of seconds")
      .transform(Number)
      .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
      .optional()
      .transform((v) => (v ?? fallback) * 1000),
  );
/** A list whose every item passes `valid`, else `message`. */
const listOf = (valid: (item: string) => boolean, message: string) =>
  textList.refine((items) => items.every(valid), message);
/** `CODE=coingecko-id`: a coin code (the symbol rule) and a CoinGecko id. */
const coinGeckoPair = (pair: string) => {
  const [code, id, ...rest] = pair.split("=");
  return (
    rest.length === 0 && id !== undefined && isWellFormedSymbol(code!.toUpperCase()) && /^[a-z0-9-]{1,100}$/.test(id)
  );
};

const schema = z.object({
  NEWS_FEEDS: listOf((url) => urlWithout(url, HTTP) !== null, URL_MESSAGE).transform((urls) =>
    urls.map((url) => urlWithout(url, HTTP)!),
  ),
  NEWS_REFRESH: seconds(300, 300, 86_400),
  COINGECKO_API_KEY: optionalText.pipe(
    z
      .string()
      .regex(/^[\x21-\x7e]{8,128}$/, "must be 8-128 visible ASCII characters")
      .optional(),
  ),
  COINGECKO_PLAN: optionalText.pipe(
    z.enum(["public", "demo", "pro"], { error: "must be public, demo or pro" }).optional(),
  ),
  COINGECKO_API_BASE: optionalUrl,
  COINGECKO_IDS: listOf(coinGeckoPair, "must be a list of CODE=coingecko-id pairs"),
  FUNDAMENTALS_SYMBOLS: listOf((code) => isWellFormedSymbol(code.toUpperCase()), "must be a list of base codes"),
  FUNDAMENTALS_REFRESH: seconds(600, 60, 86_400),
  FRED_API_KEY: optionalText.pipe(
    z
      .string()
      .regex(/^[a-z0-9]{32}$/, "must be 32 lower-case letters or digits (a FRED API key)")
      .optional(),
  ),
  FRED_API_BASE: optionalUrl,
  MACRO_SERIES: listOf(
    (id) => /^[A-Z0-9_]{1,64}$/.test(id),
    "must be a list of FRED series ids (upper-case letters, digits, _)",
  ),
  MACRO_REFRESH: seconds(86_400, 3_600, 7 * 86_400),
  MACRO_HISTORY_DAYS: optionalText.pipe(
    z
      .string()
      .regex(/^\d+$/, "must be a whole number of days")
      .transform(Number)
      .pipe(z.number().min(1).max(36_500))
      .optional(),
  ),
  SOURCE_TIMEOUT: seconds(20, 1, 300),
});

/** Every environment variable the context sources read. */
export const CONTEXT_SOURCE_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** Parses the context sources' variables; throws ConfigError naming the first bad one. */
export function parseContextSourcesConfig(env: Env): ContextSourcesConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${String(issue.path[0] ?? "context sources")} ${issue.message}`);
  }
  const v = parsed.data;
  const apiKey = v.COINGECKO_API_KEY ?? null;
  const plan: CoinGeckoPlan = v.COINGECKO_PLAN ?? (apiKey ? "demo" : "public");
  if (plan !== "public" && !apiKey) throw new ConfigError(`COINGECKO_PLAN=${plan} needs COINGECKO_API_KEY`);
  if (plan === "public" && apiKey)
    throw new ConfigError("COINGECKO_PLAN=public sends no key; unset COINGECKO_API_KEY or choose demo or pro");
  const apiBase =
    v.COINGECKO_API_BASE ?? `https://${plan === "pro" ? COINGECKO_HOSTS.pro : COINGECKO_HOSTS.demo}/api/v3`;
  // The known trap: a demo key sent to the pro host (or the reverse) is refused with 401.
  const host = new URL(apiBase).hostname;
  for (const [other, otherHost] of Object.entries(COINGECKO_HOSTS)) {
    if (plan !== "public" && other !== plan && host === otherHost) {
      throw new ConfigError(
        `COINGECKO_API_BASE points at ${host}, the ${other} host, but COINGECKO_PLAN is ${plan}; ` +
          `${plan} keys work only on ${COINGECKO_HOSTS[plan]}`,
      );
    }
  }
  const ids: Record<string, string> = { ...COINGECKO_IDS };
  for (const pair of v.COINGECKO_IDS) {
    const [code, id] = pair.split("=") as [string, string];
    ids[code.toUpperCase()] = id;
  }
  const symbols =
    v.FUNDAMENTALS_SYMBOLS.length > 0
      ? [...new Set(v.FUNDAMENTALS_SYMBOLS.map((s) => s.toUpperCase()))]
      : Object.keys(COINGECKO_IDS);
  return Object.freeze({
    news: Object.freeze({ feeds: Object.freeze([...new Set(v.NEWS_FEEDS)]), refreshMs: v.NEWS_REFRESH }),
    fundamentals: Object.freeze({
      apiKey,
      plan,
      apiBase,
      symbols: Object.freeze(symbols),
      ids: Object.freeze(ids),
      refreshMs: v.FUNDAMENTALS_REFRESH,
    }),
    macro: Object.freeze({
      apiKey: v.FRED_API_KEY ?? null,
      apiBase: v.FRED_API_BASE ?? "https://api.stlouisfed.org/fred",
      series: Object.freeze(v.MACRO_SERIES.length > 0 ? [...new Set(v.MACRO_SERIES)] : [...DEFAULT_MACRO_SERIES]),
      refreshMs: v.MACRO_REFRESH,
      historyDays: v.MACRO_HISTORY_DAYS ?? 730,
    }),
    timeoutMs: v.SOURCE_TIMEOUT,
  });
}
