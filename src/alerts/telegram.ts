/**
 * A Telegram Bot API `sendMessage` client that classifies every outcome for the outbox worker:
 * delivered, worth retrying (network, timeout, 5xx, 429 with its retry_after), or refused for
 * good (the chat does not exist or blocked the bot). Error texts never contain the bot token
 * (it is part of the URL), so they are safe to store and log.
 */
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

interface TelegramReply {
  ok?: boolean;
  description?: string;
  parameters?: { retry_after?: number };
}

const MAX_ERROR_TEXT = 200;

async function readReply(response: Response): Promise<TelegramReply> {
  try {
    const body = (await response.json()) as unknown;
    return typeof body === "object" && body !== null ? (body as TelegramReply) : {};
  } catch {
    return {};
  }
}

/** Removes the bot token (and its secret half) from a text the server wrote, e.g. a quoted URL. */
function redact(text: string, botToken: string): string {
  const secret = botToken.slice(botToken.indexOf(":") + 1);
  return text.split(botToken).join("<bot token>").split(secret).join("<bot token>");
}

function describe(status: number, reply: TelegramReply, botToken: string): string {
  const text = typeof reply.description === "string" ? `: ${redact(reply.description, botToken)}` : "";
  return `HTTP ${status}${text}`.slice(0, MAX_ERROR_TEXT);
}

/** Seconds to wait from a 429, from the body (Telegram) or the Retry-After header. */
function retryAfterMs(response: Response, reply: TelegramReply): number | undefined {
  const fromBody = reply.parameters?.retry_after;
  if (typeof fromBody === "number" && Number.isFinite(fromBody) && fromBody >= 0) return fromBody * 1000;
  // No header must not read as "0 s" (Number(null) === 0): that would retry at once, unpaused.
  const raw = response.headers.get("retry-after")?.trim();
  const header = raw ? Number(raw) : NaN;
  return Number.isFinite(header) && header >= 0 ? header * 1000 : undefined;
}

function networkError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; cause?: { code?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `timeout after ${timeoutMs} ms`;
  return `network error${e?.cause?.code ? `: ${e.cause.code}` : ""}`;
}

/** Creates a sender for the Bot API at `apiBase` (https://api.telegram.org or a compatible server). */
export function createTelegramSender(options: TelegramOptions): MessageSender {
  const url = `${options.apiBase}/bot${options.botToken}/sendMessage`;
  return {
    async send(chatId, text) {
      let response: Response;
      let reply: TelegramReply;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ chat_id: chatId, text, disable_web_page_preview: true }),
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        reply = await readReply(response);
      } catch (err) {
        return { kind: "retry", error: networkError(err, options.timeoutMs) };
      }
      if (response.ok && reply.ok !== false) return { kind: "sent" };
      const error = describe(response.status, reply, options.botToken);
      if (response.status === 429) return { kind: "retry", error, retryAfterMs: retryAfterMs(response, reply) };
      // 401/404: the bot token is wrong (an operator can fix it); 5xx: Telegram's side.
      if (response.status >= 500 || response.status === 401 || response.status === 404 || response.status === 408) return { kind: "retry", error };
      // 400 chat not found, 403 bot blocked by the member, ...: retrying cannot help.
      return { kind: "failed", error };
    },
  };
}
