/**
 * Connecting a Telegram chat in one tap: the account page asks for a one-time token and sends
 * the member to `https://t.me/<bot>?start=<token>`; Telegram then delivers the member's
 * `/start <token>` to the bot, and consumeConnectToken binds the chat that sent it. The token
 * is random (256 bits), lives CONNECT_TOKEN_TTL_MS, works once (its row is deleted as it is
 * used) and is stored only as its SHA-256. One account has at most one live token: asking for
 * a new one voids the previous.
 */
import { eq, lte, sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { accounts, alertSettings, telegramConnectTokens } from "../db/schema.ts";
import { hashToken, isWellFormedToken, newToken } from "../one-time-token.ts";

/** How long a connect link works: long enough to install Telegram, short enough to be useless if leaked later. */
export const CONNECT_TOKEN_TTL_MS = 15 * 60_000;
/** How long an expired token is kept, so that a late `/start` hears why it failed. */
const EXPIRED_TOKEN_KEPT_MS = 24 * 3_600_000;
/** The deep link that opens a chat with the bot and sends `/start <token>` when the member taps Start. */
export function connectLink(botUsername: string, token: string): string {
  return `https://t.me/${botUsername}?start=${token}`;
}

/** A new one-time token for this account (the account's older token is deleted: it no longer works). */
export async function createConnectToken(handle: DbHandle, accountId: number, now: number): Promise<string> {
  const token = newToken();
  await handle.db.transaction(async (tx) => {
    await tx.delete(telegramConnectTokens).where(eq(telegramConnectTokens.accountId, accountId));
    await tx
      .insert(telegramConnectTokens)
      .values({ tokenHash: hashToken(token), accountId, expiresAt: new Date(now + CONNECT_TOKEN_TTL_MS) });
  });
  return token;
}

export type ConnectResult =
  | { readonly kind: "connected"; readonly accountId: number; readonly email: string }
  | { readonly kind: "expired" }
  /** Never issued, already used, or replaced by a newer one. */
  | { readonly kind: "unknown" };

/**
 * Uses a token: binds `chatId` to its account (replacing any chat bound before) and deletes the
 * token, in one transaction, so a token binds at most one chat once. An expired token is deleted
 * too and binds nothing.
 */
export async function consumeConnectToken(
  handle: DbHandle,
  token: string,
  chatId: string,
  now: number,
): Promise<ConnectResult> {
  if (!isWellFormedToken(token)) return { kind: "unknown" };
  return handle.db.transaction(async (tx) => {
    const [row] = await tx
      .delete(telegramConnectTokens)
      .where(eq(telegramConnectTokens.tokenHash, hashToken(token)))
      .returning({ accountId: telegramConnectTokens.accountId, expiresAt: telegramConnectTokens.expiresAt });
    if (row === undefined) return { kind: "unknown" } as const;
    if (row.expiresAt.getTime() <= now) return { kind: "expired" } as const;
    const [account] = await tx.select({ email: accounts.email }).from(accounts).where(eq(accounts.id, row.accountId));
    if (account === undefined) return { kind: "unknown" } as const;
    // No settings yet: the chat with no coins (the member picks them on the account page).
    // The member proved the chat is theirs: it sent the token only their session could get.
    await tx
      .insert(alertSettings)
      .values({ accountId: row.accountId, chatId, chatVerified: true, symbols: [], timeframes: [] })
      .onConflictDoUpdate({
        target: alertSettings.accountId,
        set: { chatId, chatVerified: true, updatedAt: sql`now()` },
      });
    return { kind: "connected", accountId: row.accountId, email: account.email } as const;
  });
}

/** Unbinds the account's chat; its coins and timeframes stay for the next connection. */
export async function disconnectChat(handle: DbHandle, accountId: number): Promise<void> {
  await handle.db
    .update(alertSettings)
    .set({ chatId: null, chatVerified: false, updatedAt: sql`now()` })
    .where(eq(alertSettings.accountId, accountId));
}

/**
 * Deletes the tokens nobody used (the server's purge timer), a day after they expired: until
 * then a late `/start` is answered "expired" rather than "not valid".
 */
export async function purgeExpiredConnectTokens(handle: DbHandle, now: number): Promise<number> {
  const rows = await handle.db
    .delete(telegramConnectTokens)
    .where(lte(telegramConnectTokens.expiresAt, new Date(now - EXPIRED_TOKEN_KEPT_MS)))
    .returning({ tokenHash: telegramConnectTokens.tokenHash });
  return rows.length;
}
