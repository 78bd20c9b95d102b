/**
 * AdminService: operator actions on accounts, keys and Tokens. Served on the internal
 * listener and used in-process by the CLI, so both paths run exactly this code.
 */

import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  type AccountSummary as AccountSummaryMessage,
  AccountSummarySchema,
  type AdminService,
  CheckStatus,
} from "../../gen/signals/v1/admin_pb.js";
import {
  AccountError,
  type AccountSummary,
  createAccount,
  getAccountSummary,
  parseInstant,
  regenerateKey,
  setSubscription,
} from "../accounts/accounts.ts";
import { setMemberPassword } from "../accounts/sign-in/credentials.ts";
import { createPasswordLink } from "../accounts/sign-in/password-links.ts";
import type { ScryptCost } from "../accounts/sign-in/passwords.ts";
import {
  type AlertSettings,
  AlertSettingsError,
  clearAlertSettings,
  getAlertSettings,
  parseAlertSettings,
  saveAlertSettings,
} from "../alerts/settings.ts";
import { adjustTokens, applyMonthlyGrant } from "../billing/tokens.ts";
import type { Clock } from "../clock.ts";
import type { Limits } from "../config.ts";
import { type DbHandle, migrateDb, migrationStatus } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { listPayments } from "../payments/queries.ts";
import { paymentMessage } from "./payment-message.ts";

export interface AdminServiceDeps {
  readonly db: DbHandle;
  readonly limits: Limits;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Base of the links the operator hands out (password setup), e.g. https://signals.example. */
  readonly publicBaseUrl: string;
  /** The scrypt cost new member passwords are hashed at (PASSWORD_SCRYPT_LOG_N). */
  readonly passwordHashCost: ScryptCost;
  /** The operator's readiness checks (src/doctor/), composed by the caller; absent: none run. */
  readonly runChecks?: () => Promise<
    ReadonlyArray<{ name: string; status: "ok" | "missing" | "failing"; detail: string; fix: string; needed: boolean }>
  >;
}

const CHECK_STATUS = { ok: CheckStatus.OK, missing: CheckStatus.MISSING, failing: CheckStatus.FAILING } as const;

const MAX_PACK = 10_000_000;
const MONTH_MS = 31 * 24 * 3600 * 1000;

function toMessage(summary: AccountSummary, alerts: AlertSettings | null): AccountSummaryMessage {
  return create(AccountSummarySchema, {
    accountId: BigInt(summary.accountId),
    email: summary.email,
    plan: summary.plan,
    subscriptionUntil: summary.subscriptionUntil?.toISOString() ?? "",
    grantBalance: BigInt(summary.grantBalance),
    packBalance: BigInt(summary.packBalance),
    creditsLeft: BigInt(summary.tokensLeft),
    callsToday: BigInt(summary.callsToday),
    keyPrefix: summary.keyPrefix,
    grantMonth: summary.grantMonth ?? "",
    alerts: alerts ? { ...alerts, chatId: alerts.chatId ?? "" } : undefined,
    stripeCustomerId: summary.stripeCustomerId ?? "",
  });
}

function accountIdOf(raw: bigint): number {
  if (raw <= 0n || raw > BigInt(Number.MAX_SAFE_INTEGER))
    throw new AccountError("bad_request", "account_id must be a positive integer");
  return Number(raw);
}

/** Runs an admin action, translating domain errors into catalogue errors. */
async function guarded<T>(logger: Logger, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (err) {
    if (err instanceof AccountError) throw serviceError(err.code, err.message);
    if (err instanceof AlertSettingsError) throw serviceError("bad_request", err.message);
    logger.error({ err: errorSummary(err) }, "admin action failed");
    throw serviceError("unavailable");
  }
}

/** Builds the AdminService implementation. */
export function createAdminService(deps: AdminServiceDeps): ServiceImpl<typeof AdminService> {
  const { db, limits, clock, logger } = deps;
  const message = async (summary: AccountSummary) => toMessage(summary, await getAlertSettings(db, summary.accountId));
  const summaryAfterGrant = async (accountId: number) => {
    const now = clock();
    await applyMonthlyGrant(db, accountId, limits, now);
    return getAccountSummary(db, accountId, now);
  };
  return {
    createAccount: (req) =>
      guarded(logger, async () => {
        const now = clock();
        const until = req.subscriptionUntil
          ? parseInstant(req.subscriptionUntil, "subscription_until")
          : new Date(now + MONTH_MS);
        const { summary, apiKey } = await createAccount(
          db,
          { email: req.email, plan: req.plan, subscriptionUntil: until },
          limits,
          now,
        );
        logger.info({ accountId: summary.accountId, plan: summary.plan }, "account created");
        return { account: await message(summary), apiKey };
      }),
    getAccount: (req) =>
      guarded(logger, async () => ({ account: await message(await summaryAfterGrant(accountIdOf(req.accountId))) })),
    regenerateKey: (req) =>
      guarded(logger, async () => {
        const { summary, apiKey } = await regenerateKey(db, accountIdOf(req.accountId), clock());
        logger.info({ accountId: summary.accountId }, "api key regenerated");
        return { account: await message(summary), apiKey };
      }),
    setSubscription: (req) =>
      guarded(logger, async () => {
        const until = parseInstant(req.until, "until");
        return { account: await message(await setSubscription(db, accountIdOf(req.accountId), until, clock())) };
      }),
    addTokenPack: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const amount = Number(req.amount);
        if (!Number.isSafeInteger(amount) || amount < 1 || amount > MAX_PACK) {
          throw new AccountError("bad_request", `amount must be between 1 and ${MAX_PACK}`);
        }
        await applyMonthlyGrant(db, accountId, limits, clock());
        const outcome = await adjustTokens(db, accountId, "pack", amount, `pack of ${amount}`, limits);
        if (outcome === "not_found") throw new AccountError("not_found", `no account with id ${accountId}`);
        return { account: await message(await getAccountSummary(db, accountId, clock())) };
      }),
    adjustTokens: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const delta = Number(req.delta);
        const reason = req.reason.trim();
        if (!Number.isSafeInteger(delta) || delta === 0 || Math.abs(delta) > MAX_PACK) {
          throw new AccountError("bad_request", `delta must be a non-zero integer within ±${MAX_PACK}`);
        }
        if (reason === "" || reason.length > 500)
          throw new AccountError("bad_request", "reason is required (at most 500 characters)");
        await applyMonthlyGrant(db, accountId, limits, clock());
        const outcome = await adjustTokens(db, accountId, "adjustment", delta, reason, limits);
        if (outcome === "not_found") throw new AccountError("not_found", `no account with id ${accountId}`);
        if (outcome === "insufficient_credits")
          throw new AccountError("insufficient_credits", "the adjustment would take the balance below zero");
        return { account: await message(await getAccountSummary(db, accountId, clock())) };
      }),
    setAlerts: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const settings = parseAlertSettings({
          chatId: req.alerts?.chatId ?? "",
          symbols: req.alerts?.symbols ?? [],
          timeframes: req.alerts?.timeframes ?? [],
        });
        if (!(await saveAlertSettings(db, accountId, settings)))
          throw new AccountError("not_found", `no account with id ${accountId}`);
        logger.info(
          { accountId, symbols: settings.symbols.length, timeframes: settings.timeframes },
          "alert settings changed",
        );
        return { account: await message(await getAccountSummary(db, accountId, clock())) };
      }),
    clearAlerts: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const summary = await getAccountSummary(db, accountId, clock());
        await clearAlertSettings(db, accountId);
        logger.info({ accountId }, "alert settings cleared");
        return { account: await message(summary) };
      }),
    setPassword: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const { sessionsRevoked } = await setMemberPassword(db, accountId, req.password, deps.passwordHashCost);
        logger.info({ accountId, sessionsRevoked }, "member password set by the operator");
        return {
          account: await message(await getAccountSummary(db, accountId, clock())),
          sessionsRevoked: BigInt(sessionsRevoked),
        };
      }),
    listPayments: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const account = await message(await getAccountSummary(db, accountId, clock()));
        return { account, payments: (await listPayments(db, accountId)).map(paymentMessage) };
      }),
    createPasswordSetupLink: (req) =>
      guarded(logger, async () => {
        const accountId = accountIdOf(req.accountId);
        const { token, expiresAt } = await createPasswordLink(db, accountId, "setup", clock());
        logger.info({ accountId }, "password setup link created");
        return {
          account: await message(await getAccountSummary(db, accountId, clock())),
          url: `${deps.publicBaseUrl}/setup-password?token=${token}`,
          expiresAt: expiresAt.toISOString(),
        };
      }),
    migrate: () =>
      guarded(logger, async () => {
        await migrateDb(db);
        const { applied, shipped } = await migrationStatus(db);
        return { applied: BigInt(applied ?? 0), shipped: BigInt(shipped) };
      }),
    runChecks: () =>
      guarded(logger, async () => ({
        checks: ((await deps.runChecks?.()) ?? []).map((c) => ({ ...c, status: CHECK_STATUS[c.status] })),
      })),
  };
}
