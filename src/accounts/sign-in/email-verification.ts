/**
 * Links that confirm a sign-up's email. A self-service account starts
 * unverified and cannot subscribe, buy or make a key until the link mailed to its address is
 * used. The link carries a 256-bit random token; only its SHA-256 is stored, one row per
 * account (a new link replaces the old one), deleted in the transaction that marks the email
 * verified, so a link works once.
 */
import { and, eq, gt, sql } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";
import { accounts, emailVerifications } from "../../db/schema.ts";
import { hashToken, isWellFormedToken, newToken } from "../../one-time-token.ts";

/** How long a confirmation link works (a day, like the operator's setup links). */
export const VERIFY_LINK_TTL_MS = 24 * 3600 * 1000;

/** A new link for an unverified account (the old one stops working); null once it is verified. */
export async function createEmailVerification(
  handle: DbHandle,
  accountId: number,
  now: number,
): Promise<{ token: string; email: string; expiresAt: Date } | null> {
  const token = newToken();
  const expiresAt = new Date(now + VERIFY_LINK_TTL_MS);
  return handle.db.transaction(async (tx) => {
    const [account] = await tx
      .select({ email: accounts.email })
      .from(accounts)
      .where(and(eq(accounts.id, accountId), eq(accounts.emailVerified, false)));
    if (!account) return null;
    await tx
      .insert(emailVerifications)
      .values({ tokenHash: hashToken(token), accountId, expiresAt })
      .onConflictDoUpdate({ target: emailVerifications.accountId, set: { tokenHash: hashToken(token), expiresAt } });
    return { token, email: account.email, expiresAt };
  });
}

/** The address a link would confirm while it is usable; null otherwise. */
export async function checkEmailVerification(
  handle: DbHandle,
  token: string,
  now: number,
): Promise<{ email: string } | null> {
  if (!isWellFormedToken(token)) return null;
  const [row] = await handle.db
    .select({ email: accounts.email })
    .from(emailVerifications)
    .innerJoin(accounts, eq(accounts.id, emailVerifications.accountId))
    .where(and(eq(emailVerifications.tokenHash, hashToken(token)), gt(emailVerifications.expiresAt, new Date(now))));
  return row ?? null;
}

/**
 * Uses a link: one guarded DELETE takes it (unexpired), in the same transaction as the
 * account's flag, so it works once. Returns the account id, or null for an unknown, used or
 * expired link.
 */
export async function redeemEmailVerification(handle: DbHandle, token: string, now: number): Promise<number | null> {
  if (!isWellFormedToken(token)) return null;
  return handle.db.transaction(async (tx) => {
    const [used] = await tx
      .delete(emailVerifications)
      .where(and(eq(emailVerifications.tokenHash, hashToken(token)), gt(emailVerifications.expiresAt, new Date(now))))
      .returning({ accountId: emailVerifications.accountId });
    if (!used) return null;
    await tx.update(accounts).set({ emailVerified: true }).where(eq(accounts.id, used.accountId));
    return Number(used.accountId);
  });
}

/** Marks the email verified without a link (a used password reset link proves the mailbox too). */
export async function markEmailVerified(
  tx: Pick<DbHandle["db"], "update" | "delete">,
  accountId: number,
): Promise<void> {
  await tx
    .update(accounts)
    .set({ emailVerified: true })
    .where(and(eq(accounts.id, accountId), sql`NOT ${accounts.emailVerified}`));
  await tx.delete(emailVerifications).where(eq(emailVerifications.accountId, accountId));
}
