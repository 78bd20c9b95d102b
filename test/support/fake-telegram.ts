/**
 * A local fake of the Telegram Bot API: a real HTTP server. sendMessage records every message
 * and answers as scripted (ok, 5xx, 429 with retry_after, a hang, or a held request the test
 * releases), so delivery is tested over real sockets. getUpdates serves the updates a test
 * injects (a member's `/start <token>`) as Telegram does: long polling (held until an update
 * arrives or `timeout` seconds pass), `offset` confirming and dropping the updates before it.
 * getMe answers the bot (FAKE_BOT_USERNAME) for the right token and 401 for any other.
 */
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { EVENT_WAIT_MS } from "./waits.ts";

export const FAKE_BOT_TOKEN = "123456:TEST-fake-bot-token";
/** The username getMe answers for the fake bot. */
export const FAKE_BOT_USERNAME = "SignalsTestBot";

export interface ReceivedMessage {
  chatId: string;
  text: string;
  /** The event id the alert names ("Signal <id>"), if any. */
  eventId: string | null;
  at: number;
}

/**
 * What to answer one request: a status and body (after delayMs: a slow Bot API; after `until`
 * settles: a request the test holds as long as it needs), or hang (never answer) for a timeout.
 */
export type Reply =
  | { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number; until?: Promise<unknown> }
  | "hang";

/** A message update as Telegram sends it, from a member's private chat. */
export interface FakeUpdate {
  update_id: number;
  message: {
    message_id: number;
    date: number;
    chat: { id: number; type: "private" };
    from: { id: number; is_bot: false; first_name: string };
    text: string;
  };
}

/** One getUpdates request as the fake saw it. */
export interface UpdatesRequest {
  offset: number | undefined;
  timeout: number;
}

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
  /** Calls `listener` with every sendMessage request as it arrives, before it is answered. */
  onReceived(listener: (message: ReceivedMessage) => void): void;
  /** Resolves when `n` messages have been delivered (or rejects after timeoutMs). */
  waitForDelivered(n: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** Resolves when `n` requests have arrived. */
  waitForReceived(n: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** Queues a message from a member's chat, for getUpdates (or to post to a webhook with `webhookPost`). */
  injectMessage(chatId: number, text: string): FakeUpdate;
  /** Updates queued and not yet confirmed by a getUpdates offset. */
  readonly pendingUpdates: FakeUpdate[];
  /** Every getUpdates request, in order. */
  readonly updatesRequests: UpdatesRequest[];
  /** Answers for the next getUpdates requests (e.g. a 409 or 500), before the updates are served. */
  scriptUpdates(...replies: Reply[]): void;
  close(): Promise<void>;
}

/**
 * Delivers an update to a webhook as Telegram does: a JSON POST carrying the secret token header
 * (none when null). A new connection each time: a refused oversized body closes its connection.
 */
export function webhookPost(
  url: string,
  secret: string | null,
  update: unknown,
): Promise<{ status: number; body: unknown }> {
  const payload = typeof update === "string" ? update : JSON.stringify(update);
  const headers: Record<string, string | number> = {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
  };
  if (secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers, agent: false }, (res) => {
      void readBody(res).then((text) => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the text itself
        }
        resolve({ status: res.statusCode ?? 0, body });
      }, reject);
    });
    // The server may answer (413, 401) and close before the whole body is written.
    req.on("error", (err: NodeJS.ErrnoException) =>
      err.code === "EPIPE" || err.code === "ECONNRESET" ? undefined : reject(err),
    );
    req.end(payload);
  });
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

/** Starts the fake on 127.0.0.1 (or on `host`, e.g. a test network's address other namespaces reach). */
export async function startFakeTelegram(token = FAKE_BOT_TOKEN, host = "127.0.0.1"): Promise<FakeTelegram> {
  const delivered: ReceivedMessage[] = [];
  const received: ReceivedMessage[] = [];
  const replies: Reply[] = [];
  const chatReplies = new Map<string, Reply[]>();
  const hanging = new Set<ServerResponse>();
  const arrivalListeners: Array<(message: ReceivedMessage) => void> = [];
  const pendingUpdates: FakeUpdate[] = [];
  const updatesRequests: UpdatesRequest[] = [];
  const updatesReplies: Reply[] = [];
  /** getUpdates requests held open until an update arrives. */
  const pollers = new Set<() => void>();
  let nextUpdateId = 700_000_001;

  async function answerGetUpdates(body: string, res: ServerResponse): Promise<void> {
    let parsed: { offset?: number; timeout?: number };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: invalid JSON" }));
      return;
    }
    const request: UpdatesRequest = {
      offset: parsed.offset,
      timeout: Math.max(0, Math.min(50, Number(parsed.timeout ?? 0))),
    };
    updatesRequests.push(request);
    const scripted = updatesReplies.shift();
    if (scripted === "hang") {
      hanging.add(res);
      return;
    }
    if (scripted !== undefined) {
      res
        .writeHead(scripted.status, { "content-type": "application/json" })
        .end(
          JSON.stringify(scripted.body ?? { ok: false, error_code: scripted.status, description: "scripted failure" }),
        );
      return;
    }
    // An offset confirms every update before it: Telegram forgets them.
    if (request.offset !== undefined) {
      while (pendingUpdates.length > 0 && pendingUpdates[0]!.update_id < request.offset) pendingUpdates.shift();
    }
    if (pendingUpdates.length === 0 && request.timeout > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          pollers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, request.timeout * 1000);
        pollers.add(wake);
        res.on("close", wake);
      });
    }
    if (res.destroyed) return;
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ ok: true, result: pendingUpdates.slice() }));
  }

  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      if (req.method === "POST" && req.url === `/bot${token}/getUpdates`) return answerGetUpdates(body, res);
      if (req.method === "POST" && req.url === `/bot${token}/getMe`) {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            ok: true,
            result: {
              id: Number(token.split(":")[0]) || 1,
              is_bot: true,
              first_name: "Signals Alerts",
              username: FAKE_BOT_USERNAME,
            },
          }),
        );
        return;
      }
      if (req.method === "POST" && /^\/bot[^/]+\/getMe$/.test(req.url ?? "")) {
        res
          .writeHead(401, { "content-type": "application/json" })
          .end(JSON.stringify({ ok: false, error_code: 401, description: "Unauthorized" }));
        return;
      }
      if (req.method !== "POST" || req.url !== `/bot${token}/sendMessage`) {
        res
          .writeHead(404, { "content-type": "application/json" })
          .end(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }));
        return;
      }
      let parsed: { chat_id?: unknown; text?: unknown };
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        res
          .writeHead(400)
          .end(JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: invalid JSON" }));
        return;
      }
      const text = String(parsed.text ?? "");
      const message: ReceivedMessage = {
        chatId: String(parsed.chat_id),
        text,
        eventId: /^Signal (\S+)$/m.exec(text)?.[1] ?? null,
        at: Date.now(),
      };
      received.push(message);
      for (const listener of arrivalListeners) listener(message);
      const reply = chatReplies.get(message.chatId)?.shift() ?? replies.shift() ?? { status: 200 };
      if (reply === "hang") {
        hanging.add(res);
        return;
      }
      if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      if (reply.until) await reply.until;
      if (reply.status === 200) delivered.push(message);
      const answer =
        reply.body ??
        (reply.status === 200
          ? { ok: true, result: { message_id: received.length, chat: { id: parsed.chat_id }, text } }
          : { ok: false, error_code: reply.status, description: "scripted failure" });
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers }).end(JSON.stringify(answer));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    apiBase: `http://${host}:${port}`,
    delivered,
    received,
    script(...more) {
      replies.push(...more);
    },
    onReceived(listener) {
      arrivalListeners.push(listener);
    },
    scriptFor(chatId, ...more) {
      chatReplies.set(chatId, [...(chatReplies.get(chatId) ?? []), ...more]);
    },
    waitForDelivered(n, timeoutMs = EVENT_WAIT_MS) {
      return waitUntil(
        () => (delivered.length >= n ? delivered.slice() : null),
        timeoutMs,
        `${n} delivered messages (have ${delivered.length})`,
      );
    },
    waitForReceived(n, timeoutMs = EVENT_WAIT_MS) {
      return waitUntil(
        () => (received.length >= n ? received.slice() : null),
        timeoutMs,
        `${n} received requests (have ${received.length})`,
      );
    },
    pendingUpdates,
    updatesRequests,
    injectMessage(chatId, text) {
      const update: FakeUpdate = {
        update_id: nextUpdateId++,
        message: {
          message_id: nextUpdateId,
          date: Math.floor(Date.now() / 1000),
          chat: { id: chatId, type: "private" },
          from: { id: chatId, is_bot: false, first_name: "Member" },
          text,
        },
      };
      pendingUpdates.push(update);
      for (const wake of [...pollers]) wake();
      return update;
    },
    scriptUpdates(...more) {
      updatesReplies.push(...more);
    },
    async close() {
      for (const wake of [...pollers]) wake();
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
