/**
 * Self-service sign-up: an account on the `free` plan with no key, no Tokens and no
 * subscription, with its password, in one transaction. The member subscribes from the
 * account page; the first key is made there once the plan is paid.
 */
import { sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { accounts, memberPasswords } from "../db/schema.ts";
import { checkPasswordPolicy, hashPassword, PasswordPolicyError } from "./passwords.ts";

const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;
export const SIGN_UP_PLAN = "free";

export type SignUpResult = { ok: true; accountId: number } | { ok: false; status: 400 | 409; message: string };

/** Creates the account and its password, or says why not (nothing is written then); `hash` is the web's hashing queue. */
export async function signUp(db: DbHandle, input: { email: string; password: string; confirm: string }, hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work()): Promise<SignUpResult> {
  const email = input.email.trim();
  if (email.length > 320 || !EMAIL_PATTERN.test(email)) return { ok: false, status: 400, message: "Enter a valid email address." };
  if (input.password !== input.confirm) return { ok: false, status: 400, message: "The two passwords differ. Type the same password twice." };
  try {
    checkPasswordPolicy(input.password);
  } catch (err) {
    if (err instanceof PasswordPolicyError) return { ok: false, status: 400, message: `Not created: ${err.message}.` };
    throw err;
  }
  const passwordHash = await hash(() => hashPassword(input.password));
  const accountId = await db.db.transaction(async (tx) => {
    // The unique index on lower(email) decides between two concurrent sign-ups.
    const [row] = await tx
      .insert(accounts)
      .values({ email, plan: SIGN_UP_PLAN, subscriptionUntil: null })
      .onConflictDoNothing()
      .returning({ id: accounts.id });
    if (!row) return null;
    await tx.insert(memberPasswords).values({ accountId: row.id, passwordHash });
    return Number(row.id);
  });
  if (accountId === null) {
    const [existing] = await db.rows(sql`SELECT 1 FROM accounts WHERE lower(email) = lower(${email})`);
    if (existing) return { ok: false, status: 409, message: "An account with this email exists already. Sign in instead." };
    return { ok: false, status: 409, message: "The account could not be created. Try again." };
  }
  return { ok: true, accountId };
}
