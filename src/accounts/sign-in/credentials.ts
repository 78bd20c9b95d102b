/**
 * Member sign-in credentials: the password row, one-time setup links, and the lookup the
 * sign-in form uses. Setting a password (by the operator or through a link) signs out every
 * web session of the account in the same transaction; a member changing their own password
 * keeps only the session they changed it from.
 */
import { and, eq, gt, isNull, lt, ne, or, sql } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";
import { accounts, memberPasswords, passwordSetupTokens, webSessions } from "../../db/schema.ts";
import { AccountError } from "../accounts.ts";
import { hashToken, isWellFormedToken, newToken } from "../../one-time-token.ts";
import { checkPasswordPolicy, hashPassword } from "./passwords.ts";

/** How long a setup link works. */
export const SETUP_LINK_TTL_MS = 24 * 3600 * 1000;

async function requireAccount(handle: DbHandle, accountId: number): Promise<void> {
  const [row] = await handle.db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId));
  if (!row) throw new AccountError("not_found", `no account with id ${accountId}`);
}

/**
 * Writes the password hash and ends the account's web sessions, all but `keepSessionHash` when
 * given (inside the caller's transaction); returns how many sessions ended.
 */
export async function storePasswordHash(tx: Pick<DbHandle["db"], "insert" | "delete">, accountId: number, passwordHash: string, keepSessionHash?: string): Promise<number> {
  await tx
    .insert(memberPasswords)
    .values({ accountId, passwordHash })
    .onConflictDoUpdate({ target: memberPasswords.accountId, set: { passwordHash, updatedAt: sql`now()` } });
  const ofAccount = eq(webSessions.accountId, accountId);
  const revoked = await tx
    .delete(webSessions)
    .where(keepSessionHash === undefined ? ofAccount : and(ofAccount, ne(webSessions.tokenHash, keepSessionHash)))
    .returning({ tokenHash: webSessions.tokenHash });
  return revoked.length;
}

/**
 * Sets or replaces the account's password and revokes its web sessions; returns how many
 * sessions were revoked. Throws AccountError (bad_request for the policy, not_found).
 */
export async function setMemberPassword(handle: DbHandle, accountId: number, password: string): Promise<{ sessionsRevoked: number }> {
  try {
    checkPasswordPolicy(password);
  } catch (err) {
    throw new AccountError("bad_request", (err as Error).message);
  }
  await requireAccount(handle, accountId);
  const passwordHash = await hashPassword(password);
  const sessionsRevoked = await handle.db.transaction((tx) => storePasswordHash(tx, accountId, passwordHash));
  return { sessionsRevoked };
}

/**
 * A signed-in member's new password (the caller has checked the current one): every other web
 * session of the account ends, the one it was changed from (`currentSessionHash`) stays.
 * Throws PasswordPolicyError. `hash` is the web's hashing queue.
 */
export async function changeMemberPassword(
  handle: DbHandle,
  accountId: number,
  password: string,
  currentSessionHash: string,
  hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Promise<{ sessionsRevoked: number }> {
  checkPasswordPolicy(password);
  const passwordHash = await hash(() => hashPassword(password));
  const sessionsRevoked = await handle.db.transaction((tx) => storePasswordHash(tx, accountId, passwordHash, currentSessionHash));
  return { sessionsRevoked };
}

/**
 * Makes a one-time setup link token (only its hash is stored). Earlier unused links of the
 * account stop working: only the newest link the operator handed out is valid.
 */
export async function createSetupToken(handle: DbHandle, accountId: number, now: number): Promise<{ token: string; expiresAt: Date }> {
  await requireAccount(handle, accountId);
  const token = newToken();
  const expiresAt = new Date(now + SETUP_LINK_TTL_MS);
  await handle.db.transaction(async (tx) => {
    await tx.delete(passwordSetupTokens).where(and(eq(passwordSetupTokens.accountId, accountId), or(isNull(passwordSetupTokens.usedAt), lt(passwordSetupTokens.expiresAt, new Date(now)))));
    await tx.insert(passwordSetupTokens).values({ tokenHash: hashToken(token), accountId, expiresAt });
  });
  return { token, expiresAt };
}

/** The account a setup token is for, when it is unused and unexpired; null otherwise. */
export async function checkSetupToken(handle: DbHandle, token: string, now: number): Promise<{ accountId: number; email: string } | null> {
  if (!isWellFormedToken(token)) return null;
  const [row] = await handle.db
    .select({ accountId: passwordSetupTokens.accountId, email: accounts.email })
    .from(passwordSetupTokens)
    .innerJoin(accounts, eq(accounts.id, passwordSetupTokens.accountId))
    .where(and(eq(passwordSetupTokens.tokenHash, hashToken(token)), isNull(passwordSetupTokens.usedAt), gt(passwordSetupTokens.expiresAt, new Date(now))));
  return row ? { accountId: Number(row.accountId), email: row.email } : null;
}

/**
 * Uses a setup token to set the password: the token is marked used by a guarded UPDATE in the
 * same transaction as the password, so two submissions of one link cannot both succeed.
 * Returns the account id, or null when the link is unknown, used or expired. `hash` is the
 * web's hashing queue.
 */
export async function redeemSetupToken(handle: DbHandle, token: string, password: string, now: number, hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work()): Promise<number | null> {
  checkPasswordPolicy(password);
  if ((await checkSetupToken(handle, token, now)) === null) return null;
  const passwordHash = await hash(() => hashPassword(password));
  return handle.db.transaction(async (tx) => {
    const [used] = await tx
      .update(passwordSetupTokens)
      .set({ usedAt: new Date(now) })
      .where(and(eq(passwordSetupTokens.tokenHash, hashToken(token)), isNull(passwordSetupTokens.usedAt), gt(passwordSetupTokens.expiresAt, new Date(now))))
      .returning({ accountId: passwordSetupTokens.accountId });
    if (!used) return null;
    const accountId = Number(used.accountId);
    await storePasswordHash(tx, accountId, passwordHash);
    return accountId;
  });
}

/** The account and password hash for a sign-in email (case-insensitive); null when none. */
export async function findCredentials(handle: DbHandle, email: string): Promise<{ accountId: number; passwordHash: string } | null> {
  const [row] = await handle.db
    .select({ accountId: accounts.id, passwordHash: memberPasswords.passwordHash })
    .from(accounts)
    .innerJoin(memberPasswords, eq(memberPasswords.accountId, accounts.id))
    .where(sql`lower(${accounts.email}) = lower(${email.trim()})`);
  return row ? { accountId: Number(row.accountId), passwordHash: row.passwordHash } : null;
}
