/**
 * What an operator needs before selling, checked as the answering server (or the CLI, when no
 * server runs) sees it: the database reachable and migrated, a feed for every coin (age of its
 * last update, and who leads it), the demo feed off, a public address, Stripe (key, webhook
 * secret, the plans' prices and the webhook endpoint with every event it must send, through
 * Stripe's own API), SMTP (nodemailer's verify) and the Telegram bot (getMe). Each check says
 * ok, missing or failing, what it found, and the one line that fixes it. `signals doctor`
 * prints them (AdminService.RunChecks); the internal token is checked by the CLI itself.
 */
import { asc, sql } from "drizzle-orm";
import { botAgent, botMethodUrl, postJson, readReply } from "../alerts/bot-api.ts";
import { refusalText } from "../alerts/telegram.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { type DbHandle, migrationStatus } from "../db/client.ts";
import { coins, feedLeases } from "../db/schema.ts";
import { STRIPE_WEBHOOK_EVENTS } from "../payments/event-handlers.ts";
import { createStripeClient } from "../payments/stripe-client.ts";

export type CheckStatus = "ok" | "missing" | "failing";

/** One line of the report. */
export interface CheckResult {
  readonly name: string;
  readonly status: CheckStatus;
  readonly detail: string;
  /** The one line that fixes it; empty when ok. */
  readonly fix: string;
  /** Selling needs it: anything but ok fails the doctor. Otherwise only "failing" does. */
  readonly needed: boolean;
}

export interface DoctorDeps {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly config: Pick<
    Config,
    "databaseUrl" | "demoFeed" | "staleAfterMs" | "publicBaseUrl" | "payments" | "mail" | "alerts"
  >;
}

/** How long one outside service may take to answer a check. */
const OUTSIDE_TIMEOUT_MS = 8_000;

const ok = (name: string, detail: string, needed = true): CheckResult => ({
  name,
  status: "ok",
  detail,
  fix: "",
  needed,
});
const missing = (name: string, detail: string, fix: string, needed = true): CheckResult => ({
  name,
  status: "missing",
  detail,
  fix,
  needed,
});
const failing = (name: string, detail: string, fix: string, needed = true): CheckResult => ({
  name,
  status: "failing",
  detail,
  fix,
  needed,
});

const message = (err: unknown) =>
  String((err as Error)?.message ?? err)
    .split("\n")[0]!
    .slice(0, 200);

/** "12 s", "4 min", "3 h", "2 d": how long ago, for people. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

async function databaseCheck(db: DbHandle, driver: string): Promise<CheckResult> {
  try {
    const { applied, shipped } = await migrationStatus(db);
    if (applied === null || applied < shipped) {
      return failing(
        "database",
        `reachable (${driver}), ${applied ?? 0} of ${shipped} migrations applied`,
        "npx signals migrate   (or restart the server: it migrates at start)",
      );
    }
    return ok("database", `reachable (${driver}), ${applied} of ${shipped} migrations applied`);
  } catch (err) {
    return failing(
      "database",
      `not reachable: ${message(err)}`,
      "check DATABASE_URL and that PostgreSQL is running (or DATA_DIR for the embedded database)",
    );
  }
}

async function feedChecks(deps: DoctorDeps): Promise<CheckResult[]> {
  const now = deps.clock();
  let rows: Array<{ symbol: string; baseTf: string; lastUpdateAt: Date }>;
  let leases: Array<{ symbol: string; holder: string; expiresAt: Date }>;
  try {
    rows = await deps.db.db
      .select({ symbol: coins.symbol, baseTf: coins.baseTf, lastUpdateAt: coins.lastUpdateAt })
      .from(coins)
      .orderBy(asc(coins.symbol));
    leases = await deps.db.db
      .select({ symbol: feedLeases.symbol, holder: feedLeases.holder, expiresAt: feedLeases.expiresAt })
      .from(feedLeases)
      .where(sql`${feedLeases.expiresAt} > now()`);
  } catch (err) {
    return [failing("feeds", `cannot be read: ${message(err)}`, "fix the database first")];
  }
  if (rows.length === 0)
    return [
      failing(
        "feeds",
        "no coin has any candle yet",
        "DEMO_FEED=false npm start, then: npx signals feed --symbols BTC,ETH,SOL",
      ),
    ];
  const leader = new Map(leases.map((l) => [l.symbol, l.holder]));
  return rows.map((row) => {
    const age = now - row.lastUpdateAt.getTime();
    const who = leader.get(row.symbol)
      ? `led by feeder ${leader.get(row.symbol)}`
      : deps.config.demoFeed
        ? "demo feed"
        : "no feeder holds its lease";
    const detail = `last update ${ago(age)} ago (${row.baseTf} candles, ${who})`;
    if (age > deps.config.staleAfterMs)
      return failing(
        `feed ${row.symbol}`,
        `${detail}: answered stale`,
        `npx signals feed --symbols ${row.symbol}   (or look at the running feeder's 127.0.0.1:9464/healthz)`,
      );
    return ok(`feed ${row.symbol}`, detail);
  });
}

function demoFeedCheck(deps: DoctorDeps): CheckResult {
  return deps.config.demoFeed
    ? failing(
        "demo feed",
        "on: BTC, ETH, SOL, BNB and XRP get synthetic sample prices",
        "stop the server and start it with: DEMO_FEED=false npm start",
      )
    : ok("demo feed", "off");
}

function publicAddressCheck(deps: DoctorDeps): CheckResult {
  let url: URL;
  try {
    url = new URL(deps.config.publicBaseUrl);
  } catch {
    return failing(
      "public address",
      `PUBLIC_BASE_URL ${deps.config.publicBaseUrl} is not a URL`,
      "PUBLIC_BASE_URL=https://signals.example.com npm start",
    );
  }
  const local = /^(localhost|127\.|\[::1\]|0\.0\.0\.0)/.test(url.host);
  if (url.protocol !== "https:" || local) {
    return failing(
      "public address",
      `${url.origin}: members' links and Stripe's return pages ` +
        `${local ? "point at this machine only" : "are not https"}`,
      "PUBLIC_BASE_URL=https://signals.example.com npm start   (the address members reach, behind a TLS proxy)",
    );
  }
  return ok("public address", url.origin);
}

async function stripeChecks(deps: DoctorDeps): Promise<CheckResult[]> {
  const settings = deps.config.payments.stripe;
  if (!settings) {
    return [
      missing(
        "stripe key",
        "payments are off: members cannot subscribe or buy Tokens",
        "STRIPE_SECRET_KEY=sk_live_… STRIPE_WEBHOOK_SECRET=whsec_… " +
          "npm start   (Dashboard → Developers → API keys)",
      ),
      missing(
        "stripe webhook secret",
        "no webhook secret",
        "STRIPE_WEBHOOK_SECRET=whsec_…   (the signing secret of the webhook endpoint)",
      ),
    ];
  }
  const mode =
    settings.secretKey.startsWith("sk_test_") || settings.secretKey.startsWith("rk_test_")
      ? "test mode: no real money moves"
      : "live mode";
  const results: CheckResult[] = [ok("stripe key", `set (${mode})`), ok("stripe webhook secret", "set")];
  const stripe = await createStripeClient(settings)();
  const options = { timeout: OUTSIDE_TIMEOUT_MS, maxNetworkRetries: 0 };
  for (const [plan, id, needed] of [
    ["node", settings.prices.node, true],
    ["founding_seat", settings.prices.founding_seat, false],
  ] as const) {
    const name = `stripe price ${plan}`;
    const variable = plan === "node" ? "STRIPE_PRICE_NODE" : "STRIPE_PRICE_FOUNDING_SEAT";
    if (!id) {
      results.push(
        missing(
          name,
          `the ${plan} plan is not offered`,
          `${variable}=price_…   (a recurring monthly Price of its Product)`,
          needed,
        ),
      );
      continue;
    }
    try {
      const price = await stripe.prices.retrieve(id, undefined, options);
      const amount = price.unit_amount === null ? "?" : (price.unit_amount / 100).toFixed(2);
      if (!price.active || !price.recurring)
        results.push(
          failing(
            name,
            `${id} is ${price.active ? "not recurring" : "archived"}`,
            `${variable}=price_…   (an active recurring Price)`,
            needed,
          ),
        );
      else
        results.push(
          ok(name, `${id}: ${amount} ${price.currency.toUpperCase()} every ${price.recurring.interval}`, needed),
        );
    } catch (err) {
      results.push(
        failing(
          name,
          `Stripe answered: ${message(err)}`,
          `${variable}=price_…   (copy the id from the Product's page)`,
          needed,
        ),
      );
    }
  }
  const url = `${deps.config.publicBaseUrl}/webhooks/stripe`;
  const required = [...STRIPE_WEBHOOK_EVENTS];
  const where =
    "Dashboard → Developers → Webhooks; on a laptop: stripe listen --forward-to 127.0.0.1:8080/webhooks/stripe";
  const fixEndpoint = `add an endpoint at ${url} with the events ${required.join(", ")}   (${where})`;
  try {
    const endpoints = await stripe.webhookEndpoints.list({ limit: 100 }, options);
    const endpoint = endpoints.data.find((e) => e.url === url);
    if (!endpoint) {
      const others = endpoints.data.map((e) => e.url).join(", ");
      results.push(
        failing("stripe webhook endpoint", `none for ${url}${others ? ` (Stripe has: ${others})` : ""}`, fixEndpoint),
      );
    } else {
      const events = new Set(endpoint.enabled_events);
      const absent = events.has("*") ? [] : required.filter((e) => !events.has(e));
      if (endpoint.status !== "enabled")
        results.push(
          failing(
            "stripe webhook endpoint",
            `${url} is ${endpoint.status}`,
            "enable it: Dashboard → Developers → Webhooks",
          ),
        );
      else if (absent.length > 0)
        results.push(
          failing(
            "stripe webhook endpoint",
            `${url} does not send ${absent.join(", ")}`,
            `add the events ${absent.join(", ")} to it (Dashboard → Developers → Webhooks)`,
          ),
        );
      else results.push(ok("stripe webhook endpoint", `${url}, all ${required.length} events`));
    }
  } catch (err) {
    results.push(
      failing(
        "stripe webhook endpoint",
        `Stripe answered: ${message(err)}`,
        "check STRIPE_SECRET_KEY (a restricted key needs read access to webhook endpoints and prices)",
      ),
    );
  }
  return results;
}

async function smtpCheck(deps: DoctorDeps): Promise<CheckResult> {
  const mail = deps.config.mail;
  if (!mail)
    return missing(
      "smtp",
      "password reset mails are off (members cannot reset a forgotten password)",
      "SMTP_URL=smtp://user:password@smtp.example.com:587 MAIL_FROM='Signals <no-reply@example.com>' npm start",
      false,
    );
  const { createTransport } = await import("nodemailer");
  const transport = createTransport({
    url: mail.smtpUrl,
    connectionTimeout: OUTSIDE_TIMEOUT_MS,
    greetingTimeout: OUTSIDE_TIMEOUT_MS,
    socketTimeout: OUTSIDE_TIMEOUT_MS,
  } as never);
  try {
    await transport.verify();
    return ok("smtp", `${new URL(mail.smtpUrl).host} accepts our login; mails come from ${mail.from}`, false);
  } catch (err) {
    return failing(
      "smtp",
      `SMTP_URL does not work: ${message(err).replace(mail.smtpUrl, "SMTP_URL")}`,
      "check SMTP_URL's host, port, user and password",
      false,
    );
  } finally {
    transport.close();
  }
}

async function telegramCheck(deps: DoctorDeps): Promise<CheckResult> {
  const { telegramBotToken: botToken, telegramApiBase: apiBase, telegramBotUsername: username } = deps.config.alerts;
  if (!botToken)
    return missing(
      "telegram bot",
      "alerts are queued but never sent",
      "TELEGRAM_BOT_TOKEN=123456789:your-token-from-BotFather TELEGRAM_BOT_USERNAME=YourBot npm start",
      false,
    );
  const url = botMethodUrl({ apiBase, botToken }, "getMe");
  const agent = botAgent(url, 1);
  try {
    const answer = await postJson(url, "{}", agent, OUTSIDE_TIMEOUT_MS);
    const reply = readReply(answer);
    const bot = reply.result as { username?: string } | undefined;
    if (answer.status !== 200 || reply.ok !== true || !bot?.username)
      return failing(
        "telegram bot",
        `getMe refused: ${refusalText(answer.status, reply, botToken)}`,
        "TELEGRAM_BOT_TOKEN=…   (the token @BotFather gave; /token there shows it again)",
        false,
      );
    if (username && username.replace(/^@/, "").toLowerCase() !== bot.username.toLowerCase()) {
      return failing(
        "telegram bot",
        `the token is @${bot.username}'s, TELEGRAM_BOT_USERNAME says ${username}`,
        `TELEGRAM_BOT_USERNAME=${bot.username}`,
        false,
      );
    }
    return ok("telegram bot", `@${bot.username}`, false);
  } catch (err) {
    return failing(
      "telegram bot",
      `the Bot API cannot be reached: ${message(err).split(botToken).join("<bot token>")}`,
      "check the network to api.telegram.org (or TELEGRAM_API_BASE)",
      false,
    );
  } finally {
    void agent.close();
  }
}

/** Runs every check; outside services are asked at the same time. */
export async function runChecks(deps: DoctorDeps): Promise<CheckResult[]> {
  const driver = deps.config.databaseUrl ? "PostgreSQL" : "embedded PGlite";
  const [database, feeds, stripe, smtp, telegram] = await Promise.all([
    databaseCheck(deps.db, driver),
    feedChecks(deps),
    stripeChecks(deps).catch((err: unknown) => [
      failing("stripe", `cannot be checked: ${message(err)}`, "check STRIPE_SECRET_KEY and STRIPE_API_BASE"),
    ]),
    smtpCheck(deps),
    telegramCheck(deps),
  ]);
  return [database, demoFeedCheck(deps), ...feeds, publicAddressCheck(deps), ...stripe, smtp, telegram];
}
