/**
 * The configuration as a whole: it is the only reader of the environment, and what README.md
 * documents is what it reads, with the defaults README.md states.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { type FeedConfig, parseFeedConfig } from "../../../src/config/feeder.ts";
import { type ContextSourcesConfig, parseContextSourcesConfig } from "../../../src/config/sources.ts";
import { type Config, ENVIRONMENT_VARIABLES, loadConfig } from "../../../src/config.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const SRC = path.join(ROOT, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith(".ts") ? [full] : [];
  });
}

/**
 * The lines where a file reads `process.env` (`process.env.X`, `process["env"]`,
 * `{ env } = process`); text inside strings does not count.
 */
function environmentReads(file: string): number[] {
  const text = readFileSync(file, "utf8");
  if (!/\bprocess\b/.test(text) || !/\benv\b/.test(text)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const isProcess = (node: ts.Node) => node.getText(source) === "process" || node.getText(source).endsWith(".process");
  const lines: number[] = [];
  const visit = (node: ts.Node) => {
    const readsEnv =
      (ts.isPropertyAccessExpression(node) && node.name.text === "env" && isProcess(node.expression)) ||
      (ts.isElementAccessExpression(node) &&
        ts.isStringLiteralLike(node.argumentExpression) &&
        node.argumentExpression.text === "env" &&
        isProcess(node.expression)) ||
      (ts.isVariableDeclaration(node) &&
        ts.isObjectBindingPattern(node.name) &&
        node.initializer !== undefined &&
        isProcess(node.initializer) &&
        node.name.elements.some((e) => (e.propertyName ?? e.name).getText(source) === "env"));
    if (readsEnv) lines.push(source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return lines;
}

const isConfiguration = (file: string) =>
  file === path.join(SRC, "config.ts") || file.startsWith(path.join(SRC, "config") + path.sep);

describe("the environment is read in one place", () => {
  it("no module outside src/config.ts and src/config/ reads process.env", () => {
    const readers = sourceFiles(SRC)
      .filter((file) => !isConfiguration(file))
      .flatMap((file) => environmentReads(file).map((line) => `${path.relative(ROOT, file)}:${line}`));
    expect(readers).toEqual([]);
  });

  it("src/config.ts does read it (the check sees a read when there is one)", () => {
    expect(environmentReads(path.join(SRC, "config.ts")).length).toBeGreaterThan(0);
  });
});

/** One row of README.md's variable tables: the variables it names and the default it states. */
interface DocumentedRow {
  readonly names: string[];
  readonly defaults: string[];
}

/** The rows of README.md's tables headed "Variable" or "flag / variable". */
function documentedRows(): DocumentedRow[] {
  const rows: DocumentedRow[] = [];
  let inTable = false;
  for (const line of readFileSync(path.join(ROOT, "README.md"), "utf8").split("\n")) {
    if (!line.startsWith("|")) {
      inTable = false;
      continue;
    }
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    if (/^(Variable|flag \/ variable)$/.test(cells[0]!)) inTable = true;
    else if (inTable && !cells[0]!.startsWith("---")) {
      const names = [...cells[0]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!);
      const defaults = cells[1]!.split(" / ");
      rows.push({ names, defaults: names.map((_, i) => defaults[defaults.length === names.length ? i : 0]!) });
    }
  }
  return rows;
}

/** Variables set by the program for its own child processes, not by operators. */
const INTERNAL = ["SIGNALS_WORKER_ROLE"];

interface Parsed {
  readonly server: Config;
  readonly withStripe: Config;
  readonly feed: FeedConfig;
  readonly sources: ContextSourcesConfig;
}

const seconds = (ms: number) => ms / 1000;
const hours = (ms: number) => ms / 3_600_000;

/** Where each variable lands, in the unit README.md states its default in. */
const READ: Record<string, (p: Parsed) => unknown> = {
  FEED_EXCHANGE: (p) => p.feed.exchange,
  FEED_QUOTE: (p) => p.feed.quote,
  FEED_SYMBOLS: (p) => p.feed.symbols.join(","),
  FEED_TF: (p) => p.feed.tf,
  FEED_SERVER: (p) => p.feed.server,
  FEED_DATASETS: (p) => p.feed.datasets.join(","),
  FEED_REST_URL: (p) => p.feed.restUrl,
  FEED_WS_URL: (p) => p.feed.wsUrl,
  FEED_HISTORY: (p) => p.feed.historyCandles,
  FEED_SILENCE: (p) => seconds(p.feed.silenceMs),
  FEED_AUDIT_EVERY: (p) => seconds(p.feed.auditEveryMs),
  FEED_DERIVATIVES_EVERY: (p) => seconds(p.feed.derivativesEveryMs),
  FEED_FAILOVER: (p) => seconds(p.feed.failoverMs),
  FEED_METRICS_PORT: (p) => p.feed.metricsPort,
  STRIPE_SECRET_KEY: (p) => p.server.payments.stripe?.secretKey ?? null,
  STRIPE_WEBHOOK_SECRET: (p) => p.server.payments.stripe?.webhookSecret ?? null,
  STRIPE_API_BASE: (p) => p.withStripe.payments.stripe!.apiBase.url,
  STRIPE_PRICE_NODE: (p) => p.withStripe.payments.stripe!.prices.node,
  STRIPE_PRICE_FOUNDING_SEAT: (p) => p.withStripe.payments.stripe!.prices.founding_seat,
  TOKEN_PACKS: (p) =>
    p.server.payments.tokenPacks
      .map((pack) => `${pack.tokens}:${pack.currency.toUpperCase()}:${pack.unitAmount}`)
      .join(","),
  SUBSCRIPTION_GRACE_HOURS: (p) => hours(p.server.payments.subscriptionGraceMs),
  STRIPE_WEBHOOK_TOLERANCE: (p) => p.withStripe.payments.stripe!.webhookToleranceS,
  PUBLIC_BASE_URL: (p) =>
    p.server.publicBaseUrl.replace(`http://${p.server.host}:${p.server.port}`, "http://HOST:PORT"),
  PORT: (p) => p.server.port,
  HOST: (p) => p.server.host,
  INTERNAL_PORT: (p) => p.server.internalPort,
  INTERNAL_HOST: (p) => p.server.internalHost,
  INTERNAL_TOKEN: (p) => p.server.internalToken ?? p.feed.internalToken,
  DATABASE_URL: (p) => p.server.databaseUrl,
  DATA_DIR: (p) => `./${path.relative(process.cwd(), p.server.dataDir)}`,
  DB_POOL_SIZE: (p) => p.server.dbPoolSize,
  CHARGE_GROUP_WAIT_MS: (p) => p.server.chargeGroupWaitMs,
  CHARGE_RESOLVE_MS: (p) => p.server.chargeResolveMs,
  DB_SILENCE_MS: (p) => p.server.dbSilenceMs,
  DB_IDLE_IN_TRANSACTION_MS: (p) => p.server.dbIdleInTransactionMs,
  WORKERS: (p) => p.server.workers,
  MALLOC_ARENA_MAX: (p) => p.server.workerMallocArenas,
  DAILY_CAP: (p) => p.server.limits.dailyCap,
  MONTHLY_GRANT: (p) => p.server.limits.monthlyGrant,
  LOW_BALANCE_PCT: (p) => p.server.limits.lowBalancePct,
  MAX_SYMBOLS: (p) => p.server.limits.maxSymbols,
  MAX_HEADER_BYTES: (p) => p.server.maxHeaderBytes,
  HEADERS_TIMEOUT: (p) => seconds(p.server.headersTimeoutMs),
  REQUEST_TIMEOUT: (p) => seconds(p.server.requestTimeoutMs),
  IDLE_TIMEOUT: (p) => seconds(p.server.idleTimeoutMs),
  STREAM_MAX_LIFE: (p) => seconds(p.server.streamMaxLifeMs),
  STREAMS_PER_ADDRESS: (p) => p.server.streamsPerAddress,
  GOAWAY_GRACE: (p) => seconds(p.server.goawayGraceMs),
  DEMO_ACCOUNT: (p) => p.server.demoAccount,
  DEMO_FEED: (p) => p.server.demoFeed,
  STALE_AFTER: (p) => seconds(p.server.staleAfterMs),
  CATCH_UP_MS: (p) => p.server.catchUpMs,
  LOG_LEVEL: (p) => p.server.logLevel,
  TELEGRAM_BOT_TOKEN: (p) => p.server.alerts.telegramBotToken,
  TELEGRAM_API_BASE: (p) => p.server.alerts.telegramApiBase,
  TELEGRAM_BOT_USERNAME: (p) => p.server.alerts.telegramBotUsername,
  TELEGRAM_UPDATES: (p) => p.server.alerts.telegramUpdates,
  TELEGRAM_WEBHOOK_SECRET: (p) => p.server.alerts.telegramWebhookSecret,
  ALERT_MAX_DELAY: (p) => seconds(p.server.alerts.maxDelayMs),
  ALERT_SEND_TIMEOUT_MS: (p) => p.server.alerts.sendTimeoutMs,
  ALERT_RETRY_BASE_MS: (p) => p.server.alerts.retryBaseMs,
  ALERT_RETRY_MAX_MS: (p) => p.server.alerts.retryMaxMs,
  ALERT_GIVE_UP_AFTER: (p) => seconds(p.server.alerts.giveUpAfterMs),
  ALERT_WORKER: (p) => p.server.alerts.worker,
  FAILED_KEY_LIMIT: (p) => p.server.failedKeyLimit,
  FAILED_KEY_WINDOW: (p) => seconds(p.server.failedKeyWindowMs),
  SESSION_TTL_HOURS: (p) => hours(p.server.sessionTtlMs),
  PASSWORD_SCRYPT_LOG_N: (p) => p.server.passwordHashCost.logN,
  SMTP_URL: (p) => p.server.mail?.smtpUrl ?? null,
  MAIL_FROM: (p) => p.server.mail?.from ?? null,
  TRUST_PROXY: (p) => p.server.trustProxy,
  FREE_RATE_LIMIT: (p) => p.server.freeRateLimit,
  PAGE_VIEWS_PER_MINUTE: (p) => p.server.pageViews.perSessionPerMinute,
  PAGE_VIEWS_PER_DAY: (p) => p.server.pageViews.perAccountPerDay,
  KEY_LAST_USED_FLUSH_MS: (p) => p.server.keyLastUsedFlushMs,
  NEWS_FEEDS: (p) => (p.sources.news.feeds.length === 0 ? "none" : p.sources.news.feeds.join(",")),
  NEWS_REFRESH: (p) => seconds(p.sources.news.refreshMs),
  COINGECKO_API_KEY: (p) => p.sources.fundamentals.apiKey,
  COINGECKO_PLAN: (p) => p.sources.fundamentals.plan,
  COINGECKO_API_BASE: (p) => p.sources.fundamentals.apiBase,
  COINGECKO_IDS: (p) => p.sources.fundamentals.ids,
  FUNDAMENTALS_SYMBOLS: (p) => p.sources.fundamentals.symbols,
  FUNDAMENTALS_REFRESH: (p) => seconds(p.sources.fundamentals.refreshMs),
  FRED_API_KEY: (p) => p.sources.macro.apiKey,
  FRED_API_BASE: (p) => p.sources.macro.apiBase,
  MACRO_SERIES: (p) => p.sources.macro.series.join(","),
  MACRO_REFRESH: (p) => seconds(p.sources.macro.refreshMs),
  MACRO_HISTORY_DAYS: (p) => p.sources.macro.historyDays,
  SOURCE_TIMEOUT: (p) => seconds(p.sources.timeoutMs),
};

/**
 * A default README.md states as a value (a number, `code`, a word, unset), or undefined for
 * one it describes in words.
 */
function statedValue(text: string): unknown {
  if (/^\d+$/.test(text)) return Number(text);
  if (/^(true|false)$/.test(text)) return text === "true";
  if (text === "unset") return null;
  const code = /^`([^`]+)`$/.exec(text);
  if (code) return code[1];
  return /^[\w.]+$/.test(text) ? text : undefined;
}

describe("the documented variables", () => {
  const rows = documentedRows();
  const documented = new Set(rows.flatMap((row) => row.names));

  it("README.md documents every variable the configuration reads, and nothing it does not", () => {
    expect(documented.size).toBeGreaterThan(60);
    expect(ENVIRONMENT_VARIABLES.filter((name) => !documented.has(name) && !INTERNAL.includes(name))).toEqual([]);
    expect([...documented].filter((name) => !ENVIRONMENT_VARIABLES.includes(name))).toEqual([]);
  });

  it("each is parsed with the default README.md states", () => {
    const parsed: Parsed = {
      server: loadConfig({}),
      withStripe: loadConfig({ STRIPE_SECRET_KEY: "sk_test_12345678", STRIPE_WEBHOOK_SECRET: "whsec_12345678" }),
      feed: parseFeedConfig({}, []),
      sources: parseContextSourcesConfig({}),
    };
    const checked: string[] = [];
    for (const row of rows) {
      row.names.forEach((name, i) => {
        const read = READ[name];
        expect(read, `${name}: say in READ where it lands`).toBeDefined();
        const stated = statedValue(row.defaults[i]!);
        if (stated === undefined) return;
        expect(read!(parsed), name).toEqual(stated);
        checked.push(name);
      });
    }
    expect(checked.length).toBeGreaterThan(50);
  });
});
