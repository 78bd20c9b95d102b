/**
 * The one display of a new API key, across a POST -> 303 -> GET: the regenerate POST seals the
 * key into a `key_reveals` row and gives the browser a random token (a short-lived cookie); the
 * GET that follows deletes the row in the same statement that reads it, so a reload or Back finds
 * nothing. The key is never at rest in plain text: it is sealed with AES-256-GCM under a key
 * derived from the token, and the row holds only the token's hash. A row works on any server
 * process (it is in the database), and only for the account that made it.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { and, eq, gt, lte, or } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { keyReveals } from "../db/schema.ts";
import { hashToken, isWellFormedToken, newToken } from "../one-time-token.ts";

/** How long a sealed key waits for its display. */
export const KEY_REVEAL_TTL_MS = 5 * 60_000;
const IV_BYTES = 12;
const TAG_BYTES = 16;

const sealingKey = (token: string) =>
  Buffer.from(hkdfSync("sha256", Buffer.from(token, "utf8"), Buffer.alloc(0), "signals-key-reveal-v1", 32));

/** Seals a new key for one display and returns the token that opens it (for the browser only). */
export async function createKeyReveal(
  handle: DbHandle,
  accountId: number,
  apiKey: string,
  now: number,
): Promise<string> {
  const token = newToken();
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", sealingKey(token), iv);
  const sealed = Buffer.concat([cipher.update(apiKey, "utf8"), cipher.final()]);
  const sealedKey = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url");
  await handle.db.transaction(async (tx) => {
    // At most one waiting key per account: an older one is for a key that no longer works.
    await tx
      .delete(keyReveals)
      .where(or(eq(keyReveals.accountId, accountId), lte(keyReveals.expiresAt, new Date(now))));
    await tx
      .insert(keyReveals)
      .values({ tokenHash: hashToken(token), accountId, sealedKey, expiresAt: new Date(now + KEY_REVEAL_TTL_MS) });
  });
  return token;
}

/**
 * Takes the sealed key of this token and account out of the database (one DELETE … RETURNING)
 * and opens it; null when there is none (already shown, expired, another account's, or a forged token).
 */
export async function takeKeyReveal(
  handle: DbHandle,
  accountId: number,
  token: string | undefined,
  now: number,
): Promise<string | null> {
  if (token === undefined || !isWellFormedToken(token)) return null;
  const [row] = await handle.db
    .delete(keyReveals)
    .where(
      and(
        eq(keyReveals.tokenHash, hashToken(token)),
        eq(keyReveals.accountId, accountId),
        gt(keyReveals.expiresAt, new Date(now)),
      ),
    )
    .returning({ sealedKey: keyReveals.sealedKey });
  if (row === undefined) return null;
  const bytes = Buffer.from(row.sealedKey, "base64url");
  try {
    const decipher = createDecipheriv("aes-256-gcm", sealingKey(token), bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}

/** True when a new key of this account still waits for its display. */
export async function keyRevealWaiting(handle: DbHandle, accountId: number, now: number): Promise<boolean> {
  const rows = await handle.db
    .select({ tokenHash: keyReveals.tokenHash })
    .from(keyReveals)
    .where(and(eq(keyReveals.accountId, accountId), gt(keyReveals.expiresAt, new Date(now))));
  return rows.length > 0;
}

/** Deletes the sealed keys nobody came to see in time (the server's purge timer). */
export async function purgeExpiredKeyReveals(handle: DbHandle, now: number): Promise<number> {
  const rows = await handle.db
    .delete(keyReveals)
    .where(lte(keyReveals.expiresAt, new Date(now)))
    .returning({ tokenHash: keyReveals.tokenHash });
  return rows.length;
}
