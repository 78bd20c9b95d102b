/**
 * The Bot API client's classification of every outcome, against a tiny local HTTP server:
 * delivered, worth retrying (5xx, timeouts, refused connections, 429 with its wait), or
 * refused for good (400/403). The bot token is part of the URL, so no error text stored in
 * the outbox or logged may contain it, whatever the server answers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTelegramSender, type MessageSender, type SendOutcome } from "../../../src/alerts/telegram.ts";

const TOKEN = "987654:SECRET-token_abc";
/** The send timeout of the test that waits for it; the others get one no loaded machine reaches. */
const TIMEOUT_MS = 300;
const PATIENT_MS = 60_000;

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

let server: Server;
let apiBase: string;
let handler: Handler;
const requests: { method: string; url: string; contentType: string | undefined; body: string }[] = [];
const hanging = new Set<ServerResponse>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      requests.push({ method: req.method!, url: req.url!, contentType: req.headers["content-type"], body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  requests.length = 0;
});

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Handler =>
  (_req, _body, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
  };

function sender(base = apiBase, timeoutMs = PATIENT_MS): MessageSender {
  return createTelegramSender({ apiBase: base, botToken: TOKEN, timeoutMs });
}

/** Sends one message with the server answering as `reply`; checks the token is not in the outcome. */
async function sendWith(reply: Handler, timeoutMs = PATIENT_MS): Promise<SendOutcome> {
  handler = reply;
  const outcome = await sender(apiBase, timeoutMs).send("-1001234567890", "hello");
  expect(JSON.stringify(outcome)).not.toContain(TOKEN);
  expect(JSON.stringify(outcome)).not.toContain("SECRET");
  return outcome;
}

describe("telegram sender", () => {
  it("posts chat_id and text as JSON to /bot<token>/sendMessage, and a 200 ok is sent", async () => {
    const outcome = await sendWith(json(200, { ok: true, result: { message_id: 1 } }));
    expect(outcome).toEqual({ kind: "sent" });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      method: "POST",
      url: `/bot${TOKEN}/sendMessage`,
      contentType: "application/json",
    });
    expect(JSON.parse(requests[0]!.body)).toMatchObject({ chat_id: "-1001234567890", text: "hello" });
  });

  it("retries a 500, naming the status and Telegram's description", async () => {
    const outcome = await sendWith(json(500, { ok: false, error_code: 500, description: "Internal Server Error" }));
    expect(outcome).toEqual({ kind: "retry", error: "HTTP 500: Internal Server Error" });
  });

  it("retries a 502 whose body is not JSON (a proxy's error page)", async () => {
    const outcome = await sendWith((_req, _body, res) =>
      res.writeHead(502, { "content-type": "text/html" }).end("<html>Bad Gateway</html>"),
    );
    expect(outcome).toEqual({ kind: "retry", error: "HTTP 502" });
  });

  it("retries a request that gets no answer within the send timeout", async () => {
    const started = Date.now();
    const outcome = await sendWith((_req, _body, res) => void hanging.add(res), TIMEOUT_MS);
    expect(outcome).toEqual({ kind: "retry", error: `timeout after ${TIMEOUT_MS} ms` });
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 5_000);
  });

  it("retries when the connection is refused", async () => {
    // A port that was just free: listen, note the port, close.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const outcome = await sender(`http://127.0.0.1:${port}`).send("42", "hello");
    expect(outcome).toEqual({ kind: "retry", error: "network error: ECONNREFUSED" });
    expect(JSON.stringify(outcome)).not.toContain(TOKEN);
  });

  it("retries a 429 after Telegram's parameters.retry_after, in ms", async () => {
    const outcome = await sendWith(
      json(429, {
        ok: false,
        error_code: 429,
        description: "Too Many Requests: retry after 3",
        parameters: { retry_after: 3 },
      }),
    );
    expect(outcome).toEqual({ kind: "retry", error: "HTTP 429: Too Many Requests: retry after 3", retryAfterMs: 3000 });
  });

  it("retries a 429 after its Retry-After header when the body has no retry_after", async () => {
    const outcome = await sendWith(json(429, { ok: false, description: "Too Many Requests" }, { "retry-after": "2" }));
    expect(outcome).toEqual({ kind: "retry", error: "HTTP 429: Too Many Requests", retryAfterMs: 2000 });
  });

  it("prefers the body's retry_after to the header", async () => {
    const outcome = await sendWith(json(429, { ok: false, parameters: { retry_after: 5 } }, { "retry-after": "1" }));
    expect(outcome).toMatchObject({ kind: "retry", retryAfterMs: 5000 });
  });

  it("leaves a 429 with no wait given to the usual backoff (not an immediate retry)", async () => {
    const outcome = await sendWith(json(429, { ok: false, error_code: 429, description: "Too Many Requests" }));
    expect(outcome).toEqual({ kind: "retry", error: "HTTP 429: Too Many Requests" });
    expect((outcome as { retryAfterMs?: number }).retryAfterMs).toBeUndefined();
  });

  it("records a 400 'chat not found' as failed for good", async () => {
    const outcome = await sendWith(
      json(400, { ok: false, error_code: 400, description: "Bad Request: chat not found" }),
    );
    expect(outcome).toEqual({ kind: "failed", error: "HTTP 400: Bad Request: chat not found" });
  });

  it("records a 403 (the member blocked the bot) as failed for good", async () => {
    const outcome = await sendWith(
      json(403, { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" }),
    );
    expect(outcome).toEqual({ kind: "failed", error: "HTTP 403: Forbidden: bot was blocked by the user" });
  });

  it("retries 401/404 (a wrong bot token is an operator's fix, not the member's)", async () => {
    expect(await sendWith(json(401, { ok: false, description: "Unauthorized" }))).toEqual({
      kind: "retry",
      error: "HTTP 401: Unauthorized",
    });
    expect(await sendWith(json(404, { ok: false, description: "Not Found" }))).toEqual({
      kind: "retry",
      error: "HTTP 404: Not Found",
    });
  });

  it("never puts the bot token in an error, even when the server echoes the URL back", async () => {
    // Proxies and misconfigured gateways often quote the request path in their error.
    const echo: Handler = (req, _body, res) =>
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ ok: false, description: `Not Found: POST ${req.url}` }));
    const outcome = await sendWith(echo);
    expect(outcome.kind).toBe("retry");
    expect((outcome as { error: string }).error).toMatch(/^HTTP 404: Not Found: POST \/bot.+\/sendMessage$/);
    const forbidden: Handler = (_req, _body, res) =>
      res
        .writeHead(403, { "content-type": "application/json" })
        .end(JSON.stringify({ ok: false, description: `token ${TOKEN} revoked` }));
    expect((await sendWith(forbidden)).kind).toBe("failed");
  });

  it("keeps error texts short enough to store", async () => {
    const outcome = await sendWith(json(400, { ok: false, description: "x".repeat(5000) }));
    expect(outcome.kind).toBe("failed");
    expect((outcome as { error: string }).error.length).toBeLessThanOrEqual(200);
  });
});
