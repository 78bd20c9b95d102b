/**
 * A local fake of the Telegram Bot API's sendMessage: a real HTTP server that records every
 * message and answers as scripted (ok, 5xx, 429 with retry_after, a hang, or a held request
 * the test releases), so delivery is tested over real sockets.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const FAKE_BOT_TOKEN = "123456:TEST-fake-bot-token";

export interface ReceivedMessage {
  chatId: string;
  text: string;
  /** The event id the alert names ("Signal <id>"), if any. */
  eventId: string | null;
  at: number;
}

/**
 * What to answer one request: a status and body (after delayMs: a slow Bot API), or hang (never
 * answer) for a timeout.
 */
export type Reply = { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number } | "hang";

export interface FakeTelegram {
  readonly apiBase: string;
  /** Messages answered with 200 (delivered), in arrival order. */
  readonly delivered: ReceivedMessage[];
  /** Every request, whatever the answer. */
  readonly received: ReceivedMessage[];
  /** Answers for the next requests, in order; when empty, 200 ok. */
  script(...replies: Reply[]): void;
  /** Answers for the next requests to one chat, used before the general script. */
  scriptFor(chatId: string, ...replies: Reply[]): void;
  /** Resolves when `n` messages have been delivered (or rejects after timeoutMs). */
  waitForDelivered(n: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** Resolves when `n` requests have arrived. */
  waitForReceived(n: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function waitUntil<T>(check: () => T | null, timeoutMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      const value = check();
      if (value !== null) return resolve(value);
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 10);
    };
    tick();
  });
}

export async function startFakeTelegram(token = FAKE_BOT_TOKEN): Promise<FakeTelegram> {
  const delivered: ReceivedMessage[] = [];
  const received: ReceivedMessage[] = [];
  const replies: Reply[] = [];
  const chatReplies = new Map<string, Reply[]>();
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      if (req.method !== "POST" || req.url !== `/bot${token}/sendMessage`) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }));
        return;
      }
      let parsed: { chat_id?: unknown; text?: unknown };
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        res.writeHead(400).end(JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: invalid JSON" }));
        return;
      }
      const text = String(parsed.text ?? "");
      const message: ReceivedMessage = { chatId: String(parsed.chat_id), text, eventId: /^Signal (\S+)$/m.exec(text)?.[1] ?? null, at: Date.now() };
      received.push(message);
      const reply = chatReplies.get(message.chatId)?.shift() ?? replies.shift() ?? { status: 200 };
      if (reply === "hang") {
        hanging.add(res);
        return;
      }
      if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      if (reply.status === 200) delivered.push(message);
      const answer = reply.body ?? (reply.status === 200 ? { ok: true, result: { message_id: received.length, chat: { id: parsed.chat_id }, text } } : { ok: false, error_code: reply.status, description: "scripted failure" });
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers }).end(JSON.stringify(answer));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    apiBase: `http://127.0.0.1:${port}`,
    delivered,
    received,
    script(...more) {
      replies.push(...more);
    },
    scriptFor(chatId, ...more) {
      chatReplies.set(chatId, [...(chatReplies.get(chatId) ?? []), ...more]);
    },
    waitForDelivered(n, timeoutMs = 10_000) {
      return waitUntil(() => (delivered.length >= n ? delivered.slice() : null), timeoutMs, `${n} delivered messages (have ${delivered.length})`);
    },
    waitForReceived(n, timeoutMs = 10_000) {
      return waitUntil(() => (received.length >= n ? received.slice() : null), timeoutMs, `${n} received requests (have ${received.length})`);
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
