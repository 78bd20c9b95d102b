/**
 * The one way this service calls the Telegram Bot API: a JSON POST to
 * `<apiBase>/bot<token>/<method>` over a keep-alive node:http(s) agent, with a time limit and an
 * optional abort signal. The sender (telegram.ts) and the getUpdates poller use it; neither
 * ever puts the URL (it holds the bot token) into an error text.
 */
import http from "node:http";
import https from "node:https";

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

class SendTimeout extends Error {
  override name = "TimeoutError";
}

/** The URL of one Bot API method. */
export function botMethodUrl(options: { readonly apiBase: string; readonly botToken: string }, method: string): URL {
  return new URL(`${options.apiBase}/bot${options.botToken}/${method}`);
}

/** A keep-alive agent for the Bot API's origin. */
export function botAgent(url: URL, maxSockets: number): http.Agent {
  return new (url.protocol === "https:" ? https.Agent : http.Agent)({ keepAlive: true, maxSockets });
}

/**
 * POSTs JSON over a keep-alive agent. node:http rather than fetch: fetch cost about 40% of the
 * delivering process's CPU in the alerts benchmark, and a burst of alerts is CPU-bound.
 */
export function postJson(
  url: URL,
  payload: string,
  agent: http.Agent,
  timeoutMs: number,
  options: { signal?: AbortSignal; maxAnswerBytes?: number } = {},
): Promise<HttpAnswer> {
  const client = url.protocol === "https:" ? https : http;
  const maxBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size <= maxBytes) chunks.push(chunk);
        });
        res.on("end", () => {
          settle();
          const headers = res.headers;
          resolve({
            status: res.statusCode ?? 0,
            header: (name) => {
              const value = headers[name.toLowerCase()];
              return value === undefined ? null : Array.isArray(value) ? value.join(",") : value;
            },
            body: Buffer.concat(chunks).toString("utf8"),
          });
        });
        res.on("error", fail);
      },
    );
    const timer = setTimeout(() => req.destroy(new SendTimeout()), timeoutMs);
    const abort = () => req.destroy(options.signal!.reason instanceof Error ? options.signal!.reason : new Error("aborted"));
    options.signal?.addEventListener("abort", abort, { once: true });
    if (options.signal?.aborted) abort();
    function settle() {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", abort);
    }
    function fail(err: unknown) {
      settle();
      reject(err);
    }
    req.on("error", fail);
    req.end(payload);
  });
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
