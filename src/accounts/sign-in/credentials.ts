/**
 * Member sign-in credentials: the password row and the lookup the sign-in form uses (the
 * one-time links to choose a password are password-links.ts). Setting a password (by the
 * operator or through a link) signs out every web session of the account in the same
 * transaction; a member changing their own password keeps only the session they changed it from.
 */
import { and, eq, ne, sql } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";
import { accounts, memberPasswords, webSessions } from "../../db/schema.ts";
import { AccountError } from "../accounts.ts";
import { checkPasswordPolicy, hashPassword, type ScryptCost } from "./passwords.ts";

async function requireAccount(handle: DbHandle, accountId: number): Promise<void> {
  const [row] = await handle.db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId));
  if (!row) throw new AccountError("not_found", `no account with id ${accountId}`);
}

/**
 * Writes the password hash and ends the account's web sessions, all but `keepSessionHash` when
 * given (inside the caller's transaction); returns how many sessions ended.
 */
export async function storePasswordHash(
  tx: Pick<DbHandle["db"], "insert" | "delete">,
  accountId: number,
  passwordHash: string,
  keepSessionHash?: string,
): Promise<number> {
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
 * Sets or replaces the account's password, hashed at `cost` (the configuration's), and revokes
 * its web sessions; returns how many sessions were revoked. Throws AccountError (bad_request
 * for the policy, not_found).
 */
export async function setMemberPassword(
  handle: DbHandle,
  accountId: number,
  password: string,
  cost: ScryptCost,
): Promise<{ sessionsRevoked: number }> {
  try {
    checkPasswordPolicy(password);
  } catch (err) {
    throw new AccountError("bad_request", (err as Error).message);
  }
  await requireAccount(handle, accountId);
  const passwordHash = await hashPassword(password, cost);
  const sessionsRevoked = await handle.db.transaction((tx) => storePasswordHash(tx, accountId, passwordHash));
  return { sessionsRevoked };
}

/**
 * A signed-in member's new password (the caller has checked the current one): every other web
 * session of the account ends, the one it was changed from (`currentSessionHash`) stays.
 * Throws PasswordPolicyError. `cost` is the configuration's; `hash` is the web's hashing queue.
 */
export async function changeMemberPassword(
  handle: DbHandle,
  accountId: number,
  password: string,
  currentSessionHash: string,
  cost: ScryptCost,
  hash: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Promise<{ sessionsRevoked: number }> {
  checkPasswordPolicy(password);
  const passwordHash = await hash(() => hashPassword(password, cost));
  const sessionsRevoked = await handle.db.transaction((tx) =>
    storePasswordHash(tx, accountId, passwordHash, currentSessionHash),
  );
  return { sessionsRevoked };
}

/**
 * Replaces a member's hash by the same password hashed at another cost, only if the stored hash
 * is still `previousHash` (a password changed meanwhile wins); sessions are untouched, since the
 * password is the same. Returns whether the row changed.
 */
export async function replacePasswordHash(
  handle: DbHandle,
  accountId: number,
  previousHash: string,
  passwordHash: string,
): Promise<boolean> {
  const updated = await handle.db
    .update(memberPasswords)
    .set({ passwordHash, updatedAt: sql`now()` })
    .where(and(eq(memberPasswords.accountId, accountId), eq(memberPasswords.passwordHash, previousHash)))
    .returning({ accountId: memberPasswords.accountId });
  return updated.length === 1;
}

/** The account and password hash for a sign-in email (case-insensitive); null when none. */
export async function findCredentials(
  handle: DbHandle,
  email: string,
): Promise<{ accountId: number; passwordHash: string } | null> {
  const [row] = await handle.db
    .select({ accountId: accounts.id, passwordHash: memberPasswords.passwordHash })
    .from(accounts)
    .innerJoin(memberPasswords, eq(memberPasswords.accountId, accounts.id))
    .where(sql`lower(${accounts.email}) = lower(${email.trim()})`);
  return row ? { accountId: Number(row.accountId), passwordHash: row.passwordHash } : null;
}
