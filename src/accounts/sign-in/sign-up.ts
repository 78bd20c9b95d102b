/**
 * Self-service sign-up: an account on the `free` plan with no key, no Tokens and no
 * subscription, with its password, in one transaction. The member subscribes from the
 * account page; the first key is made there once the plan is paid.
 */
import type { DbHandle } from "../../db/client.ts";
import { accounts, memberPasswords } from "../../db/schema.ts";
import { checkPasswordPolicy, hashPassword, PasswordPolicyError, type ScryptCost } from "./passwords.ts";

const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;
export const SIGN_UP_PLAN = "free";

/**
 * `created` is the new account, or null when the email has an account already: the caller
 * answers both the same way and tells only the mailbox.
 */
export type SignUpResult = { ok: true; created: number | null } | { ok: false; status: 400; message: string };

/**
 * Creates the account and its password, or says why not (nothing is written then). The hash is
 * computed whether or not the email is taken, so both take the same time. `verified` is false
 * when a confirmation link will be mailed; `cost` is the configuration's; `hash` is the web's
 * hashing queue.
 */
export async function signUp(
  db: DbHandle,
  input: { email: string; password: string; confirm: string; verified: boolean },
  cost: ScryptCost,
  hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Promise<SignUpResult> {
  const email = input.email.trim();
  if (email.length > 320 || !EMAIL_PATTERN.test(email))
    return { ok: false, status: 400, message: "Enter a valid email address." };
  if (input.password !== input.confirm)
    return { ok: false, status: 400, message: "The two passwords differ. Type the same password twice." };
  try {
    checkPasswordPolicy(input.password);
  } catch (err) {
    if (err instanceof PasswordPolicyError) return { ok: false, status: 400, message: `Not created: ${err.message}.` };
    throw err;
  }
  const passwordHash = await hash(() => hashPassword(input.password, cost));
  const accountId = await db.db.transaction(async (tx) => {
    // The unique index on lower(email) decides between two concurrent sign-ups.
    const [row] = await tx
      .insert(accounts)
      .values({ email, plan: SIGN_UP_PLAN, subscriptionUntil: null, emailVerified: input.verified })
      .onConflictDoNothing()
      .returning({ id: accounts.id });
    if (!row) return null;
    await tx.insert(memberPasswords).values({ accountId: row.id, passwordHash });
    return Number(row.id);
  });
  return { ok: true, created: accountId };
}
