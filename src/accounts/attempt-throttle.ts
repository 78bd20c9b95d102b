/**
 * Attempt budgets, kept in Postgres so every server process shares them (sign-ins, sign-ups,
 * reset mails, password changes, test alerts). An attempt is reserved on all its keys before
 * any password is hashed, by one SQL function (`reserve_attempt`) that counts and refuses past
 * the limit in the same statement: parallel attempts can never pass a limit.
 * A sign-in that succeeds gives its reservation back, so the sign-in budgets count failures.
 *
 * Keys: the client's address, the email tried (hashed: people type passwords into email
 * fields) and the pair of both (hashed). Which of them refuse, and which only count, is each
 * route's policy; docs/accounts.md ("Sign-in budgets") lists them.
 *
 * Every budget keeps its keys under its own prefix (`scope`), so each sweeps only its own
 * counters with its own window.
 */
import { createHash } from "node:crypto";
import { and, like, lt, or, sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { signInFailures } from "../db/schema.ts";

export interface ThrottlePolicy {
  readonly windowMs: number;
  /** Attempts allowed per client address in one window. */
  readonly perAddress: number;
  /** Attempts allowed per email (or account) in one window. */
  readonly perEmail: number;
  /** Key prefix of a budget kept apart from the sign-in one (e.g. "reset:"); none for sign-ins. */
  readonly scope?: string;
}

/**
 * The sign-in budget. Hard limits per address (over every email, for addresses that never
 * signed in to the account) and per (email, address); the email's own count never locks: past
 * `perEmail` failures, sign-ins from addresses new to the account wait `slowdownMs` first.
 */
export interface SignInPolicy extends ThrottlePolicy {
  /** Failures allowed per (email, address) in one window, known addresses included. */
  readonly perPair: number;
  /** Wait before the password check of an address new to an email that strangers guess at. */
  readonly slowdownMs: number;
}

export const DEFAULT_THROTTLE: SignInPolicy = Object.freeze({
  windowMs: 15 * 60_000,
  perAddress: 10,
  perPair: 10,
  perEmail: 30,
  slowdownMs: 5_000,
});

export interface ThrottleKeys {
  readonly address: string;
  readonly email: string;
  /** The (email, address) pair. */
  readonly pair: string;
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The counters an attempt may touch (`scope` as in the policy); emails only hashed. */
export function throttleKeys(address: string, email: string, scope = ""): ThrottleKeys {
  const normalised = email.trim().toLowerCase();
  return {
    address: `${scope}addr:${address}`,
    email: `${scope}email:${sha256(normalised)}`,
    pair: `${scope}pair:${sha256(`${normalised}\n${address}`)}`,
  };
}

/** One key of an attempt and its limit in the window (null: counted, never refused). */
export interface Budget {
  readonly key: string;
  readonly limit: number | null;
}

/**
 * Reserves one attempt on every budget, or on none; returns 0 when reserved, else the
 * milliseconds until the fullest budget allows an attempt again.
 */
export async function reserveAttempt(
  handle: DbHandle,
  budgets: readonly Budget[],
  windowMs: number,
  now: number,
): Promise<number> {
  const keys = `{${budgets.map((b) => JSON.stringify(b.key)).join(",")}}`;
  const limits = `{${budgets.map((b) => (b.limit === null ? "NULL" : String(b.limit))).join(",")}}`;
  const [row] = await handle.rows<{ wait_ms: number | string }>(
    sql`SELECT reserve_attempt(${keys}::text[], ${limits}::integer[], ${windowMs}::bigint,
      ${new Date(now).toISOString()}::timestamptz) AS wait_ms`,
  );
  return Number(row!.wait_ms);
}

/** Gives a reservation back (a sign-in that succeeded is not a failure). */
export async function refundAttempt(handle: DbHandle, keys: readonly string[]): Promise<void> {
  await handle.rows(
    sql`UPDATE sign_in_failures SET failures = greatest(failures - 1, 0) WHERE throttle_key IN ${sql`(${sql.join(
      keys.map((k) => sql`${k}`),
      sql`, `,
    )})`}`,
  );
}

/** Attempts counted on a key in its current window. */
export async function attemptsOn(handle: DbHandle, key: string, windowMs: number, now: number): Promise<number> {
  const [row] = await handle.rows<{ failures: number }>(sql`
    SELECT failures FROM sign_in_failures WHERE throttle_key = ${key}
    AND window_start > ${new Date(now - windowMs).toISOString()}::timestamptz`);
  return row ? Number(row.failures) : 0;
}

/** The address and the email budgets of a policy, both refusing past their limits. */
export function addressAndEmailBudgets(keys: ThrottleKeys, policy: ThrottlePolicy): Budget[] {
  return [
    { key: keys.address, limit: policy.perAddress },
    { key: keys.email, limit: policy.perEmail },
  ];
}

/** Reserves an attempt on the address and the email budget of a policy; returns 0 or the wait, like reserveAttempt. */
export function reserveOnBoth(
  handle: DbHandle,
  keys: ThrottleKeys,
  policy: ThrottlePolicy,
  now: number,
): Promise<number> {
  return reserveAttempt(handle, addressAndEmailBudgets(keys, policy), policy.windowMs, now);
}

/**
 * Deletes this budget's counters whose window has passed (they say nothing any more), keeping
 * the table small. Only its own keys: another scope's window may be longer.
 */
export async function sweepExpired(handle: DbHandle, policy: ThrottlePolicy, now: number): Promise<void> {
  const scope = policy.scope ?? "";
  await handle.db
    .delete(signInFailures)
    .where(
      and(
        lt(signInFailures.windowStart, new Date(now - policy.windowMs)),
        or(
          like(signInFailures.throttleKey, `${scope}addr:%`),
          like(signInFailures.throttleKey, `${scope}email:%`),
          like(signInFailures.throttleKey, `${scope}pair:%`),
        ),
      ),
    );
}
