/**
 * A Telegram Bot API `sendMessage` client that classifies every outcome for the outbox worker:
 * delivered, worth retrying (network, timeout, 5xx, 429 with its retry_after), or refused for
 * good (the chat does not exist or blocked the bot). Error texts never contain the bot token
 * (it is part of the URL), so they are safe to store and log.
 */
import { retryAfterMs } from "../retry.ts";
import { botAgent, botMethodUrl, type HttpAnswer, postJson, readReply, type TelegramReply } from "./bot-api.ts";

export type SendOutcome =
  | { readonly kind: "sent" }
  | { readonly kind: "retry"; readonly error: string; readonly retryAfterMs?: number }
  | { readonly kind: "failed"; readonly error: string };

export interface MessageSender {
  send(chatId: string, text: string): Promise<SendOutcome>;
}

export interface TelegramOptions {
  readonly apiBase: string;
  readonly botToken: string;
  readonly timeoutMs: number;
}

const MAX_ERROR_TEXT = 200;

/** Removes the bot token (and its secret half) from a text the server wrote, e.g. a quoted URL. */
function redact(text: string, botToken: string): string {
  const secret = botToken.slice(botToken.indexOf(":") + 1);
  return text.split(botToken).join("<bot token>").split(secret).join("<bot token>");
}

/** A Bot API refusal as a short, storable text: "HTTP 403: Forbidden: bot was blocked by the user". */
export function refusalText(status: number, reply: TelegramReply, botToken: string): string {
  const text = typeof reply.description === "string" ? `: ${redact(reply.description, botToken)}` : "";
  return `HTTP ${status}${text}`.slice(0, MAX_ERROR_TEXT);
}

/** Seconds to wait from a 429, from the body (Telegram) or the Retry-After header. */
function waitFrom429(response: HttpAnswer, reply: TelegramReply): number | undefined {
  const fromBody = reply.parameters?.retry_after;
  if (typeof fromBody === "number" && Number.isFinite(fromBody) && fromBody >= 0) return fromBody * 1000;
  // No header must not read as "0 s": that would retry at once, unpaused.
  return retryAfterMs(response.header("retry-after")) ?? undefined;
}

function networkError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `timeout after ${timeoutMs} ms`;
  const code = e?.code ?? e?.cause?.code;
  return `network error${code ? `: ${code}` : ""}`;
}

/** Creates a sender for the Bot API at `apiBase` (https://api.telegram.org or a compatible server). */
export function createTelegramSender(options: TelegramOptions): MessageSender {
  const url = botMethodUrl(options, "sendMessage");
  // Connections are reused across messages (as fetch did); the lanes bound how many are open.
  const agent = botAgent(url, 64);
  return {
    async send(chatId, text) {
      let response: HttpAnswer;
      try {
        response = await postJson(
          url,
          JSON.stringify({ chat_id: chatId, text, disable_web_page_preview: true }),
          agent,
          options.timeoutMs,
        );
      } catch (err) {
        return { kind: "retry", error: networkError(err, options.timeoutMs) };
      }
      const reply = readReply(response);
      const ok = response.status >= 200 && response.status < 300;
      if (ok && reply.ok !== false) return { kind: "sent" };
      const error = refusalText(response.status, reply, options.botToken);
      if (response.status === 429) return { kind: "retry", error, retryAfterMs: waitFrom429(response, reply) };
      // 401/404: the bot token is wrong (an operator can fix it); 5xx: Telegram's side.
      if (response.status >= 500 || response.status === 401 || response.status === 404 || response.status === 408)
        return { kind: "retry", error };
      // 400 chat not found, 403 bot blocked by the member, ...: retrying cannot help.
      return { kind: "failed", error };
    },
  };
}
