/**
 * Server-side web sessions in Postgres. The browser holds a 256-bit random token (cookie
 * `sid`); the table holds only its SHA-256, so a copy of the database cannot be replayed as
 * a cookie. Each session has its own CSRF secret. Sign-out and password changes delete rows,
 * which ends the session on every server process at once.
 */
import { randomBytes } from "node:crypto";
import { and, eq, gt, lt } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";
import { webSessions } from "../../db/schema.ts";
import { hashToken, isWellFormedToken, newToken } from "../../one-time-token.ts";

export interface WebSession {
  readonly accountId: number;
  /** Key of the HMAC that makes this session's CSRF tokens. */
  readonly csrfSecret: string;
  readonly tokenHash: string;
}

/** Starts a session; returns the cookie token (never stored) and when it ends. */
export async function createSession(
  handle: DbHandle,
  accountId: number,
  now: number,
  ttlMs: number,
): Promise<{ token: string; expiresAt: Date }> {
  const token = newToken();
  const expiresAt = new Date(now + ttlMs);
  // Expired rows are swept here, at sign-in, rather than by a job nobody runs.
  await handle.db.delete(webSessions).where(lt(webSessions.expiresAt, new Date(now)));
  await handle.db
    .insert(webSessions)
    .values({ tokenHash: hashToken(token), accountId, csrfSecret: randomBytes(32).toString("base64url"), expiresAt });
  return { token, expiresAt };
}

/** The live session of a cookie token, or null (malformed, unknown, signed out or expired). */
export async function findSession(
  handle: DbHandle,
  token: string | undefined,
  now: number,
): Promise<WebSession | null> {
  if (token === undefined || !isWellFormedToken(token)) return null;
  const tokenHash = hashToken(token);
  const [row] = await handle.db
    .select({ accountId: webSessions.accountId, csrfSecret: webSessions.csrfSecret })
    .from(webSessions)
    .where(and(eq(webSessions.tokenHash, tokenHash), gt(webSessions.expiresAt, new Date(now))));
  return row ? { accountId: Number(row.accountId), csrfSecret: row.csrfSecret, tokenHash } : null;
}

/** Ends every session of the account ("Sign out everywhere"); returns how many ended. */
export async function deleteAccountSessions(handle: DbHandle, accountId: number): Promise<number> {
  const ended = await handle.db
    .delete(webSessions)
    .where(eq(webSessions.accountId, accountId))
    .returning({ tokenHash: webSessions.tokenHash });
  return ended.length;
}

/** Ends one session (sign-out). */
export async function deleteSession(handle: DbHandle, tokenHash: string): Promise<void> {
  await handle.db.delete(webSessions).where(eq(webSessions.tokenHash, tokenHash));
}
