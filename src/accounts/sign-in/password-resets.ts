/**
 * Password reset links a member asks for by email. The link carries a 256-bit random token;
 * the table keeps only its SHA-256 and finds a link by that hash (an index lookup on a hash of
 * a random secret tells a timing observer nothing). A link works for RESET_LINK_TTL_MS and
 * once: using it marks it used in the same transaction that sets the password and ends every
 * web session of the account.
 */
import { and, eq, gt, isNull, sql } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";
import { accounts, passwordResets } from "../../db/schema.ts";
import { hashToken, isWellFormedToken, newToken } from "../../one-time-token.ts";
import { storePasswordHash } from "./credentials.ts";
import { markEmailVerified } from "./email-verification.ts";
import { checkPasswordPolicy, hashPassword } from "./passwords.ts";

/** How long a reset link works. */
export const RESET_LINK_TTL_MS = 3600 * 1000;

/** A new link for the account of `email` (case-insensitive), or null when no account has it. */
export async function createPasswordReset(handle: DbHandle, email: string, now: number): Promise<{ token: string; accountId: number; email: string; expiresAt: Date } | null> {
  const [account] = await handle.db
    .select({ id: accounts.id, email: accounts.email })
    .from(accounts)
    .where(sql`lower(${accounts.email}) = lower(${email.trim()})`);
  if (!account) return null;
  const token = newToken();
  const expiresAt = new Date(now + RESET_LINK_TTL_MS);
  await handle.db.transaction(async (tx) => {
    // Only the newest link works (the member follows the mail they just asked for); used and
    // expired rows go too, so the table holds at most one row per account.
    await tx.delete(passwordResets).where(eq(passwordResets.accountId, account.id));
    await tx.insert(passwordResets).values({ tokenHash: hashToken(token), accountId: account.id, createdAt: new Date(now), expiresAt });
  });
  return { token, accountId: Number(account.id), email: account.email, expiresAt };
}

const usable = (token: string, now: number) => and(eq(passwordResets.tokenHash, hashToken(token)), isNull(passwordResets.usedAt), gt(passwordResets.expiresAt, new Date(now)));

/** The account a reset link is for while it is unused and unexpired; null otherwise. */
export async function checkPasswordReset(handle: DbHandle, token: string, now: number): Promise<{ accountId: number; email: string } | null> {
  if (!isWellFormedToken(token)) return null;
  const [row] = await handle.db
    .select({ accountId: passwordResets.accountId, email: accounts.email })
    .from(passwordResets)
    .innerJoin(accounts, eq(accounts.id, passwordResets.accountId))
    .where(usable(token, now));
  return row ? { accountId: Number(row.accountId), email: row.email } : null;
}

/**
 * Uses a reset link to set the password: one guarded UPDATE (unused and unexpired) marks it
 * used, in the same transaction as the password and the end of every session, so two
 * submissions of one link cannot both succeed. Returns the account id, or null when the link
 * is unknown, used or expired. Throws PasswordPolicyError. `hash` is the web's hashing queue.
 */
export async function redeemPasswordReset(handle: DbHandle, token: string, password: string, now: number, hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work()): Promise<number | null> {
  checkPasswordPolicy(password);
  if (!isWellFormedToken(token)) return null;
  const passwordHash = await hash(() => hashPassword(password));
  return handle.db.transaction(async (tx) => {
    const [used] = await tx.update(passwordResets).set({ usedAt: new Date(now) }).where(usable(token, now)).returning({ accountId: passwordResets.accountId });
    if (!used) return null;
    const accountId = Number(used.accountId);
    await storePasswordHash(tx, accountId, passwordHash);
    // The link reached the account's mailbox: that proves the address as a sign-up's link would.
    await markEmailVerified(tx, accountId);
    return accountId;
  });
}
