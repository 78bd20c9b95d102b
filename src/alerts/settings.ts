/**
 * A member's alert settings: one Telegram chat and the coins and timeframes to be alerted on.
 * Set by the operator (`signals alerts set`) and by the member on the account page; both go
 * through parseAlertSettings, so the rules are the same everywhere. The chat may also be bound
 * by the bot's `/start <token>` (telegram-connect.ts) and unbound on its own (disconnect): the
 * coins and timeframes then stay, and nothing is queued until a chat is connected again.
 */
import { eq, sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { accounts, alertSettings } from "../db/schema.ts";
import { isWellFormedSymbol } from "../market/symbols.ts";
import { isTimeframe, TIMEFRAMES, type Timeframe } from "../market/timeframes.ts";

export interface AlertSettings {
  /** null: no chat connected. */
  chatId: string | null;
  symbols: string[];
  timeframes: Timeframe[];
}

/** Settings as stored, with whether the chat was proven through the bot's `/start` (test alerts need it). */
export interface StoredAlertSettings extends AlertSettings {
  /** Bound by `/start <token>` and unchanged since; false for a typed chat id or no chat. */
  chatVerified: boolean;
}

/** Most coins one member can follow. */
export const MAX_ALERT_SYMBOLS = 50;

/** Telegram chat ids: a (possibly negative) integer, or a public @channelname. */
const CHAT_ID_PATTERN = /^(-?[1-9]\d{0,19}|@[A-Za-z][A-Za-z0-9_]{4,31})$/;

/** Why a settings change was refused (shown to the operator or member as is). */
export class AlertSettingsError extends Error {
  override name = "AlertSettingsError";
}

function splitList(raw: string | readonly string[]): string[] {
  const parts = typeof raw === "string" ? raw.split(",") : raw.flatMap((part) => part.split(","));
  return parts.map((part) => part.trim()).filter((part) => part !== "");
}

/**
 * Validates and normalises settings: symbols upper-cased and de-duplicated (first kept),
 * timeframes de-duplicated in the canonical order. A null chat id keeps the coins without a
 * chat (the web page, before Telegram is connected); a given one must be well formed. Throws
 * AlertSettingsError.
 */
export function parseAlertSettings(input: {
  chatId: string | null;
  symbols: string | readonly string[];
  timeframes: string | readonly string[];
}): AlertSettings {
  const chatId = input.chatId === null ? null : input.chatId.trim();
  if (chatId !== null && !CHAT_ID_PATTERN.test(chatId))
    throw new AlertSettingsError(
      `chat id must be a Telegram chat id (a number) or @channelname, got "${chatId.slice(0, 40)}"`,
    );
  const symbols = [...new Set(splitList(input.symbols).map((s) => s.toUpperCase()))];
  if (symbols.length === 0) throw new AlertSettingsError("name at least one coin, e.g. BTC,ETH");
  if (symbols.length > MAX_ALERT_SYMBOLS) throw new AlertSettingsError(`at most ${MAX_ALERT_SYMBOLS} coins`);
  const badSymbol = symbols.find((s) => !isWellFormedSymbol(s));
  if (badSymbol !== undefined)
    throw new AlertSettingsError(
      `"${badSymbol.slice(0, 20)}" is not a coin code (1 to 15 letters or digits, e.g. BTC)`,
    );
  const requested = splitList(input.timeframes);
  if (requested.length === 0)
    throw new AlertSettingsError(`name at least one timeframe among ${TIMEFRAMES.join(", ")}`);
  const badTf = requested.find((tf) => !isTimeframe(tf));
  if (badTf !== undefined)
    throw new AlertSettingsError(`timeframe must be one of ${TIMEFRAMES.join(", ")}, got "${badTf.slice(0, 10)}"`);
  const timeframes = TIMEFRAMES.filter((tf) => requested.includes(tf));
  return { chatId, symbols, timeframes };
}

/** The account's settings, or null when it receives no alerts. */
export async function getAlertSettings(handle: DbHandle, accountId: number): Promise<StoredAlertSettings | null> {
  const [row] = await handle.db.select().from(alertSettings).where(eq(alertSettings.accountId, accountId));
  if (!row) return null;
  return {
    chatId: row.chatId,
    chatVerified: row.chatId !== null && row.chatVerified,
    symbols: row.symbols,
    timeframes: row.timeframes.filter(isTimeframe),
  };
}

/**
 * Replaces the account's settings; false when the account does not exist. A chat proven
 * through `/start` stays proven only while the chat id stays the same: a typed chat id
 * (from the account page or the operator) is never proven.
 */
export async function saveAlertSettings(
  handle: DbHandle,
  accountId: number,
  settings: AlertSettings,
): Promise<boolean> {
  const [account] = await handle.db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId));
  if (!account) return false;
  const { chatId, symbols, timeframes } = settings;
  await handle.db
    .insert(alertSettings)
    .values({ accountId, chatId, symbols, timeframes, chatVerified: false })
    .onConflictDoUpdate({
      target: alertSettings.accountId,
      set: {
        chatId,
        chatVerified: sql`${alertSettings.chatVerified} AND ${alertSettings.chatId} IS NOT DISTINCT
          FROM excluded.chat_id`,
        symbols,
        timeframes,
        updatedAt: sql`now()`,
      },
    });
  return true;
}

/** Removes the account's settings (no further alerts; rows already in the outbox still go out). */
export async function clearAlertSettings(handle: DbHandle, accountId: number): Promise<void> {
  await handle.db.delete(alertSettings).where(eq(alertSettings.accountId, accountId));
}
