/**
 * Account and key queries (plain functions over the Database). Balances are never written
 * here: they move only through the SQL functions called from billing/.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import { applyMonthlyGrant } from "../billing/tokens.ts";
import { mytDay } from "../clock.ts";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { accounts, apiKeys } from "../db/schema.ts";
import { displayPrefix, generateApiKey, hashApiKey } from "./api-key.ts";

const PLAN_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;
const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** A refused operator action with its catalogue code. */
export class AccountError extends Error {
  readonly code: "bad_request" | "not_found" | "conflict" | "insufficient_credits";
  constructor(code: AccountError["code"], message: string) {
    super(message);
    this.code = code;
  }
}

export interface AccountSummary {
  accountId: number;
  email: string;
  plan: string;
  subscriptionUntil: Date | null;
  grantBalance: number;
  packBalance: number;
  tokensLeft: number;
  callsToday: number;
  keyPrefix: string;
  grantMonth: string | null;
  /** The account's Stripe Customer (created at its first checkout), or null. */
  stripeCustomerId: string | null;
  /** False for a self-service sign-up whose emailed link has not been used yet. */
  emailVerified: boolean;
}

/** Validates a plan name (any lower-case identifier; only node/founding_seat may call). */
export function checkPlan(plan: string): string {
  if (!PLAN_PATTERN.test(plan))
    throw new AccountError(
      "bad_request",
      `plan must be a lower-case name such as node or founding_seat, got "${plan}"`,
    );
  return plan;
}

/** Parses an ISO-8601 instant with a zone (Z or ±hh:mm), or throws bad_request. */
export function parseInstant(text: string, what: string): Date {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:\d{2})?$/.test(text);
  const date = new Date(text);
  if (!ok || Number.isNaN(date.getTime()))
    throw new AccountError("bad_request", `${what} must be an ISO 8601 date-time, got "${text}"`);
  return date;
}

/** Creates an account with its first key; the grant of the current month is applied at once. */
export async function createAccount(
  handle: DbHandle,
  input: { email: string; plan: string; subscriptionUntil: Date },
  limits: Limits,
  now: number,
): Promise<{ summary: AccountSummary; apiKey: string }> {
  const email = input.email.trim();
  if (!EMAIL_PATTERN.test(email)) throw new AccountError("bad_request", `email is not valid: "${input.email}"`);
  const plan = checkPlan(input.plan);
  const apiKey = generateApiKey();
  const accountId = await handle.db.transaction(async (tx) => {
    const existing = await tx
      .select({ id: accounts.id })
      .from(accounts)
      .where(sql`lower(${accounts.email}) = lower(${email})`);
    if (existing.length > 0) throw new AccountError("conflict", `an account with email ${email} already exists`);
    const [row] = await tx
      .insert(accounts)
      .values({ email, plan, subscriptionUntil: input.subscriptionUntil })
      .returning({ id: accounts.id });
    const id = row!.id;
    await tx
      .insert(apiKeys)
      .values({ accountId: id, keyHash: hashApiKey(apiKey), displayPrefix: displayPrefix(apiKey) });
    return id;
  });
  await applyMonthlyGrant(handle, accountId, limits, now);
  return { summary: await getAccountSummary(handle, accountId, now), apiKey };
}

/** Reads one account with balances and today's usage; throws not_found. */
export async function getAccountSummary(handle: DbHandle, accountId: number, now: number): Promise<AccountSummary> {
  const rows = await handle.db
    .select({
      accountId: accounts.id,
      email: accounts.email,
      plan: accounts.plan,
      subscriptionUntil: accounts.subscriptionUntil,
      grantBalance: accounts.grantBalance,
      packBalance: accounts.packBalance,
      grantMonth: accounts.grantMonth,
      keyPrefix: apiKeys.displayPrefix,
      usageDay: accounts.usageDay,
      callsToday: accounts.callsToday,
      stripeCustomerId: accounts.stripeCustomerId,
      emailVerified: accounts.emailVerified,
    })
    .from(accounts)
    .leftJoin(apiKeys, and(eq(apiKeys.accountId, accounts.id), isNull(apiKeys.revokedAt)))
    .where(eq(accounts.id, accountId));
  const row = rows[0];
  if (!row) throw new AccountError("not_found", `no account with id ${accountId}`);
  const grantMonth = row.grantMonth ? row.grantMonth.slice(0, 7) : null;
  return {
    accountId: Number(row.accountId),
    email: row.email,
    plan: row.plan,
    subscriptionUntil: row.subscriptionUntil,
    grantBalance: Number(row.grantBalance),
    packBalance: Number(row.packBalance),
    tokensLeft: Number(row.grantBalance) + Number(row.packBalance),
    callsToday: row.usageDay === mytDay(now) ? Number(row.callsToday) : 0,
    keyPrefix: row.keyPrefix ?? "",
    grantMonth,
    stripeCustomerId: row.stripeCustomerId,
    emailVerified: row.emailVerified,
  };
}

/** Replaces the account's key in one transaction; the old hash is revoked before commit. */
export async function regenerateKey(
  handle: DbHandle,
  accountId: number,
  now: number,
): Promise<{ summary: AccountSummary; apiKey: string }> {
  const apiKey = (await replaceKey(handle, accountId, now, undefined))!;
  return { summary: await getAccountSummary(handle, accountId, now), apiKey };
}

/**
 * Regenerates the key only while the account's valid key is still `replacesKeyId` (null: no key
 * yet); returns the new key, or null when the key changed since (a confirmation used twice).
 */
export async function regenerateKeyIfCurrent(
  handle: DbHandle,
  accountId: number,
  replacesKeyId: number | null,
  now: number,
): Promise<string | null> {
  return replaceKey(handle, accountId, now, replacesKeyId);
}

/** Id of the account's valid key, or null when it has none. */
export async function activeKeyId(handle: DbHandle, accountId: number): Promise<number | null> {
  const [row] = await handle.db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)));
  return row?.id ?? null;
}

/** Revokes the valid key and makes a new one; with `expected` defined, only while the valid key is that one. */
async function replaceKey(
  handle: DbHandle,
  accountId: number,
  now: number,
  expected: number | null | undefined,
): Promise<string | null> {
  const apiKey = generateApiKey();
  const replaced = await handle.db.transaction(async (tx) => {
    // Lock the account so a concurrent charge_call re-checks the key after we commit, and so two
    // regenerations of one account run one after the other (the second sees the first's key).
    const locked = await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for("update");
    if (locked.length === 0) throw new AccountError("not_found", `no account with id ${accountId}`);
    if (expected !== undefined) {
      const [current] = await tx
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(and(eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)));
      if ((current?.id ?? null) !== expected) return false;
    }
    await tx
      .update(apiKeys)
      .set({ revokedAt: new Date(now) })
      .where(and(eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)));
    await tx.insert(apiKeys).values({ accountId, keyHash: hashApiKey(apiKey), displayPrefix: displayPrefix(apiKey) });
    return true;
  });
  return replaced ? apiKey : null;
}

/** Sets the end of the paid period (renewal makes the same key work again). */
export async function setSubscription(
  handle: DbHandle,
  accountId: number,
  until: Date,
  now: number,
): Promise<AccountSummary> {
  const updated = await handle.db
    .update(accounts)
    .set({ subscriptionUntil: until })
    .where(eq(accounts.id, accountId))
    .returning({ id: accounts.id });
  if (updated.length === 0) throw new AccountError("not_found", `no account with id ${accountId}`);
  return getAccountSummary(handle, accountId, now);
}
