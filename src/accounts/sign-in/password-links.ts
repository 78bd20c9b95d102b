/**
 * One-time links to choose a password, of two kinds that differ only in who asks and how long
 * they work: `setup` links the operator hands out (`signals account password --link`, 24 hours)
 * and `reset` links a member asks for by email ("Forgot password?", 1 hour). The link carries a
 * 256-bit random token; the table keeps only its SHA-256 and finds a link by that hash (an index
 * lookup on a hash of a random secret tells a timing observer nothing). Only the newest link of
 * each kind works for an account, and only at its own kind's address: a "Forgot password?"
 * request, which anyone who knows the address can make, must not cancel the operator's pending
 * setup link. A link works once: using it marks it used in the same transaction that sets the
 * password, ends every web session of the account and retires its other links.
 */
import { and, eq, gt, isNull, sql } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";
import { accounts, passwordLinks } from "../../db/schema.ts";
import { hashToken, isWellFormedToken, newToken } from "../../one-time-token.ts";
import { AccountError } from "../accounts.ts";
import { storePasswordHash } from "./credentials.ts";
import { markEmailVerified } from "./email-verification.ts";
import { checkPasswordPolicy, hashPassword, type ScryptCost } from "./passwords.ts";

export type PasswordLinkKind = "setup" | "reset";

/** How long a link of each kind works. */
export const PASSWORD_LINK_TTL_MS: Readonly<Record<PasswordLinkKind, number>> = Object.freeze({
  setup: 24 * 3600 * 1000,
  reset: 3600 * 1000,
});

/** A link's token (shown once, never stored) and when it stops working. */
export interface PasswordLink {
  readonly token: string;
  readonly expiresAt: Date;
}

/** The account a usable link is for. */
export interface PasswordLinkTarget {
  readonly accountId: number;
  readonly email: string;
  readonly kind: PasswordLinkKind;
}

/**
 * Makes a link for the account (only its hash is stored). The account's earlier links of the
 * same kind stop working (the member follows the newest link they were given); links of the
 * other kind are left alone. Throws AccountError (not_found).
 */
export async function createPasswordLink(
  handle: DbHandle,
  accountId: number,
  kind: PasswordLinkKind,
  now: number,
): Promise<PasswordLink> {
  const token = newToken();
  const expiresAt = new Date(now + PASSWORD_LINK_TTL_MS[kind]);
  await handle.db.transaction(async (tx) => {
    const [account] = await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId));
    if (!account) throw new AccountError("not_found", `no account with id ${accountId}`);
    await tx.delete(passwordLinks).where(and(eq(passwordLinks.accountId, accountId), eq(passwordLinks.kind, kind)));
    await tx
      .insert(passwordLinks)
      .values({ tokenHash: hashToken(token), accountId, kind, createdAt: new Date(now), expiresAt });
  });
  return { token, expiresAt };
}

/** A reset link for the account of `email` (case-insensitive), or null when no account has it. */
export async function createResetLinkFor(
  handle: DbHandle,
  email: string,
  now: number,
): Promise<(PasswordLink & { accountId: number; email: string }) | null> {
  const [account] = await handle.db
    .select({ id: accounts.id, email: accounts.email })
    .from(accounts)
    .where(sql`lower(${accounts.email}) = lower(${email.trim()})`);
  if (!account) return null;
  const link = await createPasswordLink(handle, Number(account.id), "reset", now);
  return { ...link, accountId: Number(account.id), email: account.email };
}

const usable = (token: string, kind: PasswordLinkKind, now: number) =>
  and(
    eq(passwordLinks.tokenHash, hashToken(token)),
    eq(passwordLinks.kind, kind),
    isNull(passwordLinks.usedAt),
    gt(passwordLinks.expiresAt, new Date(now)),
  );

/**
 * The account a link of `kind` is for while it is unused and unexpired; null otherwise (a link of the other kind too).
 */
export async function checkPasswordLink(
  handle: DbHandle,
  token: string,
  kind: PasswordLinkKind,
  now: number,
): Promise<PasswordLinkTarget | null> {
  if (!isWellFormedToken(token)) return null;
  const [row] = await handle.db
    .select({ accountId: passwordLinks.accountId, email: accounts.email, kind: passwordLinks.kind })
    .from(passwordLinks)
    .innerJoin(accounts, eq(accounts.id, passwordLinks.accountId))
    .where(usable(token, kind, now));
  return row ? { accountId: Number(row.accountId), email: row.email, kind: row.kind } : null;
}

/**
 * Uses a link to set the password: one guarded UPDATE (unused and unexpired) marks it used, in
 * the same transaction as the password and the end of every session, so two submissions of one
 * link cannot both succeed. The account's other unused links are deleted with it: the password
 * they were for is chosen. Returns the account and the link's kind, or null when the link is
 * unknown, of another kind, used or expired. Throws PasswordPolicyError. `cost` is the
 * configuration's; `hash` is the web's hashing queue.
 */
export async function redeemPasswordLink(
  handle: DbHandle,
  token: string,
  kind: PasswordLinkKind,
  password: string,
  now: number,
  cost: ScryptCost,
  hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Promise<{ accountId: number; kind: PasswordLinkKind } | null> {
  checkPasswordPolicy(password);
  if (!isWellFormedToken(token)) return null;
  const passwordHash = await hash(() => hashPassword(password, cost));
  return handle.db.transaction(async (tx) => {
    const [used] = await tx
      .update(passwordLinks)
      .set({ usedAt: new Date(now) })
      .where(usable(token, kind, now))
      .returning({ accountId: passwordLinks.accountId, kind: passwordLinks.kind });
    if (!used) return null;
    const accountId = Number(used.accountId);
    await tx.delete(passwordLinks).where(and(eq(passwordLinks.accountId, accountId), isNull(passwordLinks.usedAt)));
    await storePasswordHash(tx, accountId, passwordHash);
    // A reset link reached the account's mailbox: that proves the address as a sign-up's link would.
    if (used.kind === "reset") await markEmailVerified(tx, accountId);
    return { accountId, kind: used.kind };
  });
}
