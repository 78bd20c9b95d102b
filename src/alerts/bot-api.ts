/**
 * The one way this service calls the Telegram Bot API: a JSON POST to
 * `<apiBase>/bot<token>/<method>` over undici's keep-alive connection pool, with a time limit and
 * an optional abort signal. The sender (telegram.ts) and the getUpdates poller use it; neither
 * ever puts the URL (it holds the bot token) into an error text.
 *
 * undici's `request`, not `fetch` (which is built on it): per call `fetch` cost the client about
 * seven times the CPU of `request` (bench/bot-api-client.ts, docs/decisions.md), and a burst of
 * alerts is CPU-bound.
 */
import { type Dispatcher, Pool, request } from "undici";

/** The fields of a Bot API answer this service reads. */
export interface TelegramReply {
  ok?: boolean;
  description?: string;
  parameters?: { retry_after?: number };
  result?: unknown;
}

/** What the callers need of an HTTP answer. */
export interface HttpAnswer {
  readonly status: number;
  header(name: string): string | null;
  readonly body: string;
}

/** Answers larger than this are cut (a sendMessage reply is a few hundred bytes). */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The URL of one Bot API method. */
export function botMethodUrl(options: { readonly apiBase: string; readonly botToken: string }, method: string): URL {
  return new URL(`${options.apiBase}/bot${options.botToken}/${method}`);
}

/** Keep-alive connections to the Bot API's origin, at most `connections` at once; `close()` when done. */
export function botAgent(url: URL, connections: number): Dispatcher {
  return new Pool(url.origin, { connections });
}

/**
 * POSTs JSON through `agent` (botAgent's pool); rejects on a network error, on `timeoutMs`
 * (a TimeoutError, whatever stage the call is at) and when `signal` aborts.
 */
export async function postJson(
  url: URL,
  payload: string,
  agent: Dispatcher,
  timeoutMs: number,
  options: { signal?: AbortSignal; maxAnswerBytes?: number } = {},
): Promise<HttpAnswer> {
  const maxBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const res = await request(url, {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json" },
    body: payload,
    signal,
    // The signal bounds the whole call; undici's own stage timeouts would only cut it shorter.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= maxBytes) chunks.push(chunk);
  }
  const headers = res.headers;
  return {
    status: res.statusCode,
    header: (name) => {
      const value = headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(",") : value;
    },
    body: Buffer.concat(chunks).toString("utf8"),
  };
}

/** The answer's JSON object, or {} when it is not one. */
export function readReply(answer: HttpAnswer): TelegramReply {
  try {
    const body = JSON.parse(answer.body) as unknown;
    return typeof body === "object" && body !== null ? (body as TelegramReply) : {};
  } catch {
    return {};
  }
}
