/**
 * What the bot does with an update from Telegram, whichever way it arrived (getUpdates polling
 * or the webhook): a `/start <token>` message connects the chat that sent it (telegram-connect.ts)
 * and is answered in that chat; every other update is ignored. The update's shape is checked
 * here, once, for both ways.
 */

import type { Logger } from "pino";
import { z } from "zod";
import type { DbHandle } from "../db/client.ts";
import type { MessageSender } from "./telegram.ts";
import { CONNECT_TOKEN_TTL_MS, consumeConnectToken } from "./telegram-connect.ts";

/** The part of a Telegram Update this service reads; other fields and kinds pass through unread. */
const updateSchema = z.looseObject({
  update_id: z.number().int().nonnegative(),
  message: z
    .looseObject({
      chat: z.looseObject({ id: z.union([z.number().int(), z.string().regex(/^-?\d{1,20}$/)]) }),
      text: z.string().max(4096).optional(),
    })
    .optional(),
});

export type TelegramUpdate = z.output<typeof updateSchema>;

/** The update, or null when the value is not a Telegram Update. */
export function parseUpdate(value: unknown): TelegramUpdate | null {
  const parsed = updateSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** `/start`, `/start <token>` or `/start@BotName <token>`; group 1 is the token. */
const START_COMMAND = /^\/start(?:@[A-Za-z0-9_]+)?(?:\s+(\S+))?\s*$/;

const TTL_MINUTES = CONNECT_TOKEN_TTL_MS / 60_000;

export interface UpdateHandlerDeps {
  readonly db: DbHandle;
  readonly sender: MessageSender;
  readonly clock: () => number;
  readonly logger: Logger;
}

const TRY_AGAIN = 'Open your account page and tap "Connect Telegram" again.';

/** The reply to a `/start` message (exported for the docs and tests: the exact wording members see). */
export const START_REPLIES = {
  connected: (email: string) => `Connected to ${email}. Your signal alerts will come to this chat.`,
  expired: `This link has expired (links work for ${TTL_MINUTES} minutes). ${TRY_AGAIN}`,
  unknown: `This link is not valid or was already used. ${TRY_AGAIN}`,
  noToken: `To receive alerts here, open your account page and tap "Connect Telegram".`,
} as const;

/**
 * Handles one update: binds the chat on a valid `/start <token>` and replies in the chat either
 * way. Throws only when the database fails (the caller retries the update); a reply Telegram
 * refuses is logged, not retried (the binding stands).
 */
export async function handleUpdate(deps: UpdateHandlerDeps, update: TelegramUpdate): Promise<void> {
  const message = update.message;
  const match = message?.text === undefined ? null : START_COMMAND.exec(message.text.trim());
  if (!message || match === null) return;
  const chatId = String(message.chat.id);
  let reply: string;
  if (match[1] === undefined) {
    reply = START_REPLIES.noToken;
  } else {
    const result = await consumeConnectToken(deps.db, match[1], chatId, deps.clock());
    if (result.kind === "connected") deps.logger.info({ accountId: result.accountId }, "telegram chat connected");
    reply = result.kind === "connected" ? START_REPLIES.connected(result.email) : START_REPLIES[result.kind];
  }
  const outcome = await deps.sender.send(chatId, reply);
  if (outcome.kind !== "sent")
    deps.logger.warn({ error: outcome.error }, "telegram: the reply to /start was not delivered");
}
