/**
 * Failed sign-in budget, kept in Postgres so every server process shares it. Two counters per
 * attempt: the client's address and the email tried (hashed: people type passwords into email
 * fields). Once a counter reaches its limit within the window, sign-ins for that address or
 * email are answered 429 without checking the password, so the limit cannot be probed.
 *
 * The email limit is higher than the address limit on purpose: one address can never use up
 * an email's budget, so a member is not locked out by a single attacker's guesses; a guess
 * campaign spread over many addresses still meets a bound per email.
 *
 * Other budgets (password reset mails) share the table under their own key prefix (`scope`),
 * so each sweeps only its own counters with its own window.
 */
import { createHash } from "node:crypto";
import { and, like, lt, or, sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { signInFailures } from "../db/schema.ts";

export interface ThrottlePolicy {
  readonly windowMs: number;
  /** Failures allowed per client address in one window. */
  readonly perAddress: number;
  /** Failures allowed per email in one window. */
  readonly perEmail: number;
  /** Key prefix of a budget kept apart from the sign-in one (e.g. "reset:"); none for sign-ins. */
  readonly scope?: string;
}

export const DEFAULT_THROTTLE: ThrottlePolicy = Object.freeze({ windowMs: 15 * 60_000, perAddress: 10, perEmail: 30 });

/** The two counters an attempt touches (`scope` as in the policy). */
export function throttleKeys(address: string, email: string, scope = ""): { address: string; email: string } {
  return {
    address: `${scope}addr:${address}`,
    email: `${scope}email:${createHash("sha256").update(email.trim().toLowerCase(), "utf8").digest("hex")}`,
  };
}

/** Milliseconds until each key's budget allows an attempt again (0: allowed now). */
export async function throttleWaits(handle: DbHandle, keys: { address: string; email: string }, policy: ThrottlePolicy, now: number): Promise<{ address: number; email: number }> {
  const rows = await handle.rows<{ throttle_key: string; failures: number; window_start: Date | string }>(sql`
    SELECT throttle_key, failures, window_start FROM sign_in_failures
     WHERE throttle_key IN (${keys.address}, ${keys.email}) AND window_start > ${new Date(now - policy.windowMs).toISOString()}::timestamptz`);
  const waits = { address: 0, email: 0 };
  for (const row of rows) {
    const which = row.throttle_key === keys.address ? "address" : "email";
    const limit = which === "address" ? policy.perAddress : policy.perEmail;
    if (Number(row.failures) >= limit) waits[which] = Math.max(0, new Date(row.window_start).getTime() + policy.windowMs - now);
  }
  return waits;
}

/** Milliseconds until sign-ins are allowed again for these keys, or 0 when they are allowed now. */
export async function throttledFor(handle: DbHandle, keys: { address: string; email: string }, policy: ThrottlePolicy, now: number): Promise<number> {
  const waits = await throttleWaits(handle, keys, policy, now);
  return Math.max(waits.address, waits.email);
}

/**
 * Counts one failure on both keys: one statement per key that starts a new window when the
 * old one has passed, so concurrent failures are all counted (no read-then-write).
 */
export async function recordFailure(handle: DbHandle, keys: { address: string; email: string }, policy: ThrottlePolicy, now: number): Promise<void> {
  const at = new Date(now).toISOString();
  const windowStartsAfter = new Date(now - policy.windowMs).toISOString();
  for (const key of [keys.address, keys.email]) {
    await handle.rows(sql`
      INSERT INTO sign_in_failures (throttle_key, failures, window_start) VALUES (${key}, 1, ${at}::timestamptz)
      ON CONFLICT (throttle_key) DO UPDATE SET
        failures = CASE WHEN sign_in_failures.window_start <= ${windowStartsAfter}::timestamptz THEN 1 ELSE sign_in_failures.failures + 1 END,
        window_start = CASE WHEN sign_in_failures.window_start <= ${windowStartsAfter}::timestamptz THEN ${at}::timestamptz ELSE sign_in_failures.window_start END`);
  }
  // Counters whose window has passed say nothing any more; sweeping them keeps the table small.
  // Only this budget's own keys: another scope's window may be longer.
  const scope = policy.scope ?? "";
  await handle.db
    .delete(signInFailures)
    .where(and(lt(signInFailures.windowStart, new Date(now - policy.windowMs)), or(like(signInFailures.throttleKey, `${scope}addr:%`), like(signInFailures.throttleKey, `${scope}email:%`))));
}
