/**
 * The operator CLI: `signals <command> [options]`. Every command accepts --json and then
 * prints exactly one JSON object. Bad arguments print a one-line reason and exit 2; refused
 * operations exit 1; no stack traces.
 */

import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import type { AccountSummary, Payment } from "../../gen/signals/v1/admin_pb.js";
import { type Config, ConfigError, loadConfig } from "../config.ts";
import { DATASETS, isPushedDataset } from "../market-data/datasets.ts";
import { CliError, withAdminClient, withInternalTransport } from "./admin-client.ts";
import { readSecretFromStdin } from "./read-secret.ts";

// Start-up time: a command loads its heavy modules (database, services, Connect,
// generated code) when it runs, through admin-client.ts and the dynamic imports below, so
// `account show` through a running server loads only the Connect client.

const USAGE = `Usage: signals <command> [options]   (every command accepts --json, and --field NAME to print one field \
of it)

  serve                                        start the server (same as npm start)
  feed [--exchange X] [--quote Q] [--symbols A,B] [--tf TF] [--server URL] [--datasets candles,derivatives]
                                               live market data from an exchange (docs/feeder.md)
  migrate                                      apply database migrations (through the running
                                               server when one holds the data directory)
  token rotate                                 new internal token in DATA_DIR/internal-token; the
                                               running server and local feeders switch to it
  doctor                                       check what selling needs (database, token, feeders,
                                               demo feed, Stripe, SMTP, Telegram); exit 1 if not ready
  account create --email E --plan P [--until ISO-8601]
                                               create an account; prints its API key once
  account show --account ID                    plan, subscription, balances, calls today
  key regenerate --account ID                  new key (printed once); the old one stops at once
  subscription set --account ID --until ISO-8601
  tokens pack --account ID --amount N          add a Token pack (never expires)
  tokens adjust --account ID --delta N --reason TEXT
                                               manual correction, written to the ledger
  candles import --file F --symbol S --tf TF   import closed candles from CSV or .csv.gz
                                               (history: stores signal events, sends no alerts)
  alerts set --account ID --chat CHAT_ID --symbols BTC,ETH --tf 4h,1d
                                               alert the member's Telegram chat on these
  alerts clear --account ID                    stop the member's alerts
  account password --account ID                set the member's web password, read from
                                               standard input (signs out their web sessions)
  account password --account ID --link         print a one-time link (24 h) where the member
                                               chooses a password
  payments list --account ID                   payments Stripe reported (packs, subscription
                                               invoices, refunds, disputes), their Stripe ids
                                               and ledger rows, newest first
  verify-log FILE                              recompute the chain of a signal log downloaded from
                                               /track-record; names the first break, exit 1 if any
  data import --dataset D --file F             import a free-endpoint dataset (derivatives, news,
                                               macro, fundamentals) from JSON lines or .gz

Environment: DATABASE_URL (Postgres) or DATA_DIR (embedded, default ./.data); see README.`;

class UsageError extends Error {
  override name = "UsageError";
}

const OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  email: { type: "string" },
  plan: { type: "string" },
  until: { type: "string" },
  account: { type: "string" },
  amount: { type: "string" },
  delta: { type: "string" },
  reason: { type: "string" },
  file: { type: "string" },
  symbol: { type: "string" },
  tf: { type: "string" },
  chat: { type: "string" },
  symbols: { type: "string" },
  link: { type: "boolean" },
  dataset: { type: "string" },
  field: { type: "string" },
} as const;

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

function required(
  values: Values,
  name:
    | "email"
    | "plan"
    | "until"
    | "account"
    | "amount"
    | "delta"
    | "reason"
    | "file"
    | "symbol"
    | "tf"
    | "chat"
    | "symbols"
    | "dataset",
): string {
  const value = values[name];
  if (value === undefined || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

function integerArg(values: Values, name: "account" | "amount" | "delta"): bigint {
  const raw = required(values, name);
  if (!/^-?\d{1,15}$/.test(raw)) throw new UsageError(`--${name} must be a whole number, got "${raw}"`);
  return BigInt(raw);
}

function summaryJson(account: AccountSummary | undefined): Record<string, unknown> {
  if (!account) return {};
  return {
    account_id: Number(account.accountId),
    email: account.email,
    plan: account.plan,
    subscription_until: account.subscriptionUntil || null,
    grant_balance: Number(account.grantBalance),
    pack_balance: Number(account.packBalance),
    tokens_left: Number(account.creditsLeft),
    calls_today: Number(account.callsToday),
    key_prefix: account.keyPrefix || null,
    grant_month: account.grantMonth || null,
    alerts: account.alerts
      ? { chat_id: account.alerts.chatId, symbols: account.alerts.symbols, timeframes: account.alerts.timeframes }
      : null,
    stripe_customer_id: account.stripeCustomerId || null,
  };
}

function paymentJson(p: Payment): Record<string, unknown> {
  const l = p.ledgerEntry;
  const orNull = (v: string) => v || null;
  return {
    id: Number(p.id),
    kind: p.kind,
    created_at: p.createdAt,
    amount: Number(p.amount),
    currency: orNull(p.currency),
    tokens: Number(p.tokens),
    shortfall: Number(p.shortfall),
    stripe_event_id: p.stripeEventId,
    checkout_session_id: orNull(p.checkoutSessionId),
    payment_intent_id: orNull(p.paymentIntentId),
    invoice_id: orNull(p.invoiceId),
    subscription_id: orNull(p.subscriptionId),
    charge_id: orNull(p.chargeId),
    dispute_id: orNull(p.disputeId),
    detail: orNull(p.detail),
    ledger_entry: l
      ? {
          id: Number(l.id),
          kind: l.kind,
          grant_delta: Number(l.grantDelta),
          pack_delta: Number(l.packDelta),
          grant_after: Number(l.grantAfter),
          pack_after: Number(l.packAfter),
          reason: l.reason || null,
        }
      : null,
  };
}

/** One line per payment for people: what, when, how much, the Stripe ids, the ledger row. */
function describePayments(payments: Record<string, unknown>[]): string[] {
  if (payments.length === 0) return ["", "no payments"];
  return [
    "",
    `${payments.length} payment(s), newest first:`,
    ...payments.map((p) => {
      const money = p.currency ? `${(Number(p.amount) / 100).toFixed(2)} ${String(p.currency).toUpperCase()}` : "-";
      const ids = [
        "checkout_session_id",
        "payment_intent_id",
        "invoice_id",
        "subscription_id",
        "charge_id",
        "dispute_id",
      ]
        .map((k) => p[k])
        .filter(Boolean)
        .join(" ");
      const ledger = p.ledger_entry as { id: number; grant_delta: number; pack_delta: number } | null;
      const delta = ledger ? ledger.grant_delta + ledger.pack_delta : 0;
      const moved = ledger ? `ledger #${ledger.id} ${delta >= 0 ? "+" : ""}${delta}` : "no ledger row";
      const shortfall = Number(p.shortfall) > 0 ? `  SHORTFALL ${p.shortfall}` : "";
      return (
        `  #${p.id} ${p.created_at} ${p.kind} ${money} tokens ${p.tokens}  ${moved}${shortfall} ` +
        ` ${ids} (${p.stripe_event_id})${p.detail ? `  ${p.detail}` : ""}`
      );
    }),
  ];
}

/** How a command's result is printed: lines for people, one JSON object (--json), or one of its fields (--field). */
type Output = boolean | { field: string };

function printResult(output: Output, result: Record<string, unknown>, lines: string[]): void {
  if (typeof output === "object") {
    const value = result[output.field];
    if (value === undefined || value === null)
      throw new UsageError(`--field ${output.field}: this command's result has no such field (--json shows them)`);
    process.stdout.write(`${typeof value === "object" ? JSON.stringify(value) : String(value)}\n`);
  } else if (output) process.stdout.write(`${JSON.stringify(result)}\n`);
  else process.stdout.write(`${lines.join("\n")}\n`);
}

function describe(result: Record<string, unknown>): string[] {
  const lines = [
    `account ${result.account_id} <${result.email}>  plan ${result.plan} ` +
      ` subscription until ${result.subscription_until ?? "(none)"}`,
    `Tokens: ${result.tokens_left} (grant ${result.grant_balance} for ${result.grant_month ?? "-"}, ` +
      `packs ${result.pack_balance})  calls today: ${result.calls_today}`,
    `key: ${result.key_prefix ?? "(none)"}…  Stripe customer: ${result.stripe_customer_id ?? "(none)"}`,
  ];
  const alerts = result.alerts as { chat_id: string; symbols: string[]; timeframes: string[] } | null | undefined;
  if (alerts !== undefined) {
    lines.push(
      alerts
        ? `alerts: chat ${alerts.chat_id || "(none connected)"}  coins ${alerts.symbols.join(",")} ` +
            ` timeframes ${alerts.timeframes.join(",")}`
        : "alerts: off",
    );
  }
  if (typeof result.api_key === "string") {
    lines.push("", `API key (shown once, store it now): ${result.api_key}`);
  }
  if (typeof result.sessions_revoked === "number") {
    lines.push("", `Web password set; ${result.sessions_revoked} web session(s) signed out.`);
  }
  if (Array.isArray(result.payments)) lines.push(...describePayments(result.payments as Record<string, unknown>[]));
  if (typeof result.setup_link === "string") {
    lines.push(
      "",
      `Password setup link (works once, until ${result.expires_at}; send it to the member privately):`,
      `  ${result.setup_link}`,
    );
  }
  return lines;
}

async function runAdmin(
  config: Config,
  command: string,
  values: Values,
  password: string | null,
): Promise<Record<string, unknown>> {
  return withAdminClient(config, async (client) => {
    switch (command) {
      case "account create": {
        const r = await client.createAccount({
          email: required(values, "email"),
          plan: required(values, "plan"),
          subscriptionUntil: values.until ?? "",
        });
        return { ...summaryJson(r.account), api_key: r.apiKey };
      }
      case "account show":
        return summaryJson((await client.getAccount({ accountId: integerArg(values, "account") })).account);
      case "key regenerate": {
        const r = await client.regenerateKey({ accountId: integerArg(values, "account") });
        return { ...summaryJson(r.account), api_key: r.apiKey };
      }
      case "subscription set":
        return summaryJson(
          (await client.setSubscription({ accountId: integerArg(values, "account"), until: required(values, "until") }))
            .account,
        );
      case "tokens pack":
        return summaryJson(
          (
            await client.addTokenPack({
              accountId: integerArg(values, "account"),
              amount: integerArg(values, "amount"),
            })
          ).account,
        );
      case "tokens adjust":
        return summaryJson(
          (
            await client.adjustTokens({
              accountId: integerArg(values, "account"),
              delta: integerArg(values, "delta"),
              reason: required(values, "reason"),
            })
          ).account,
        );
      case "alerts set": {
        const alerts = {
          chatId: required(values, "chat"),
          symbols: required(values, "symbols").split(","),
          timeframes: required(values, "tf").split(","),
        };
        return summaryJson((await client.setAlerts({ accountId: integerArg(values, "account"), alerts })).account);
      }
      case "alerts clear":
        return summaryJson((await client.clearAlerts({ accountId: integerArg(values, "account") })).account);
      case "account password": {
        if (password === null) {
          const r = await client.createPasswordSetupLink({ accountId: integerArg(values, "account") });
          return { ...summaryJson(r.account), setup_link: r.url, expires_at: r.expiresAt };
        }
        const r = await client.setPassword({ accountId: integerArg(values, "account"), password });
        return { ...summaryJson(r.account), sessions_revoked: Number(r.sessionsRevoked) };
      }
      case "payments list": {
        const r = await client.listPayments({ accountId: integerArg(values, "account") });
        return { ...summaryJson(r.account), payments: r.payments.map(paymentJson) };
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  });
}

/**
 * parseArgs refuses `--delta -3` (a value starting with a dash is "ambiguous"), yet a negative
 * number after a string option can only be its value: rewrite it as `--delta=-3`.
 */
function attachNegativeNumbers(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (arg === "--") return out.concat(argv.slice(i));
    const option = OPTIONS[arg.slice(2) as keyof typeof OPTIONS] as { type: string } | undefined;
    if (arg.startsWith("--") && option?.type === "string" && next !== undefined && /^-\d+$/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** Runs one CLI invocation; resolves to the process exit code. `env` replaces this process's environment (tests). */
export async function runCli(argv: string[], env?: Record<string, string | undefined>): Promise<number> {
  let json = argv.includes("--json");
  if (argv[0] === "feed") return (await import("../feeder/feed-command.ts")).runFeedCommand(argv.slice(1));
  try {
    const { values, positionals } = parseArgs({
      args: attachNegativeNumbers(argv),
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
    });
    json = values.json === true;
    // --field NAME prints only that field of the --json object (e.g. the api_key of account create).
    const output: Output = values.field ? { field: values.field } : json;
    const command = positionals.slice(0, 2).join(" ");
    if (values.help || positionals.length === 0 || positionals[0] === "help") {
      process.stdout.write(`${USAGE}\n`);
      return positionals.length === 0 && !values.help ? 2 : 0;
    }
    if (positionals[0] === "serve") {
      await (await import("../main.ts")).main();
      return -1; // keep running until a signal
    }
    if (positionals[0] === "verify-log") {
      // Needs no database and no server: the member's downloaded file is all it reads.
      const file = positionals[1];
      if (file === undefined || positionals.length !== 2)
        throw new UsageError("verify-log needs one FILE: signals verify-log signal-log.jsonl");
      if (!existsSync(file)) throw new UsageError(`${file} does not exist`);
      const { readFileSync } = await import("node:fs");
      const { verifyChainLog } = await import("../market/event-chain.ts");
      const verdict = verifyChainLog(readFileSync(file, "utf8"));
      printResult(
        output,
        { ...verdict },
        verdict.ok
          ? [`ok: ${verdict.events} events, the chain is intact; head ${verdict.head}`]
          : [
              `broken at line ${verdict.line}${verdict.id === null ? "" : ` (event ${verdict.id})`}: ${verdict.reason}`,
              `the ${verdict.events} events before it chain correctly`,
            ],
      );
      return verdict.ok ? 0 : 1;
    }
    const config = loadConfig(env);
    if (positionals[0] === "doctor" && positionals.length === 1)
      return await (await import("./doctor-command.ts")).runDoctor(config, json);
    if (command === "token rotate") {
      if (config.internalToken) {
        throw new ConfigError(
          "INTERNAL_TOKEN is set in this environment and overrides the token file; " +
            "change INTERNAL_TOKEN where it is set (server and feeders) instead",
        );
      }
      const { rotateInternalToken, internalTokenPath } = await import("../server/internal-token.ts");
      rotateInternalToken(config.dataDir);
      const file = internalTokenPath(config.dataDir);
      printResult(output, { ok: true, rotated: true, file }, [
        `new internal token written to ${file} (0600)`,
        "A running server accepts only the new token from now on; feeders " +
          "and the CLI on this machine read it again by themselves.",
        `Feeders elsewhere: copy ${file} into their DATA_DIR (0600), or update their INTERNAL_TOKEN and restart them.`,
      ]);
      return 0;
    }
    if (positionals[0] === "migrate") {
      // Through the running server when one holds the embedded data directory (it migrated at
      // its start); else in this process, which opens and migrates the database first.
      const { applied, shipped } = await withAdminClient(config, async (client) => client.migrate({}));
      const { readFileSync } = await import("node:fs");
      const { migrationsFolder } = await import("../db/client.ts");
      const ours = (
        JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, "utf8")) as { entries: unknown[] }
      ).entries.length;
      const newer = ours > Number(shipped);
      printResult(output, { ok: !newer, migrated: true, applied: Number(applied), shipped: ours }, [
        `migrations applied: ${applied} of ${ours}`,
        ...(newer
          ? [
              `the running server's code knows ${shipped}: restart it (npm ` +
                `start) to apply the ${ours - Number(shipped)} new one(s)`,
            ]
          : []),
      ]);
      return newer ? 1 : 0;
    }
    if (command === "candles import") {
      const file = required(values as Values, "file");
      if (!existsSync(file)) throw new UsageError(`--file ${file} does not exist`);
      const symbol = required(values as Values, "symbol");
      const tf = required(values as Values, "tf");
      const { importCandles } = await import("./import-command.ts");
      const result = await withInternalTransport(config, (transport) => importCandles(transport, file, symbol, tf));
      const reasons = result.rejections.slice(0, 5).map((r) => `  row ${r.index + 1}: ${r.reason}`);
      printResult(output, { ok: true, ...result }, [
        `${result.symbol} ${result.tf}: accepted ${result.accepted}, ` +
          `rejected ${result.rejected}, duplicates ${result.duplicates}`,
        ...reasons,
      ]);
      return 0;
    }
    if (command === "data import") {
      const dataset = required(values as Values, "dataset");
      if (!isPushedDataset(dataset))
        throw new UsageError(`--dataset must be one of ${DATASETS.join(", ")}, got "${dataset}"`);
      const file = required(values as Values, "file");
      if (!existsSync(file)) throw new UsageError(`--file ${file} does not exist`);
      const { importDataset } = await import("./data-import-command.ts");
      const result = await withInternalTransport(config, (transport) => importDataset(transport, dataset, file));
      const reasons = result.rejections
        .slice(0, 5)
        .map((r) => `  line ${r.line}: ${r.reason}${r.key ? ` (${r.key})` : ""}`);
      printResult(output, { ok: true, ...result }, [
        `${result.dataset}: accepted ${result.accepted}, rejected ${result.rejected}, duplicates ${result.duplicates}`,
        ...reasons,
        ...(result.rejected > reasons.length
          ? [`  (${result.rejected - reasons.length} more; --json lists the first 100 and counts every reason)`]
          : []),
      ]);
      return 0;
    }
    if (positionals.length !== 2) throw new UsageError(`unknown command "${positionals.join(" ")}"`);
    // Read before any database work: a prompt must not hold the embedded data directory.
    let password: string | null = null;
    if (command === "account password" && !values.link) {
      integerArg(values as Values, "account");
      password = await readSecretFromStdin("password").catch((err: Error) => {
        throw new UsageError(err.message);
      });
    }
    const result = await runAdmin(config, command, values as Values, password);
    printResult(output, result, describe(result));
    return 0;
  } catch (err) {
    return await reportFailure(err, json);
  }
}

async function reportFailure(err: unknown, json: boolean): Promise<number> {
  const { ConnectError } = await import("@connectrpc/connect");
  let code: string;
  let message: string;
  let exit = 1;
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith?.("ERR_PARSE_ARGS")) {
    code = "usage";
    message = `${(err as Error).message}\n\n${USAGE}`;
    exit = 2;
  } else if (err instanceof ConfigError) {
    code = "config";
    message = err.message;
    exit = 2;
  } else if (err instanceof ConnectError) {
    code = (await import("../errors.ts")).errorCodeOf(err);
    message = err.rawMessage;
  } else if (err instanceof CliError) {
    code = "busy";
    message = err.message;
  } else {
    code = "failed";
    message = (err as Error)?.message ?? String(err);
  }
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: code, message: message.split("\n")[0] })}\n`);
  process.stderr.write(`signals: ${message}\n`);
  return exit;
}
