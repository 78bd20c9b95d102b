/**
 * Every error the HTTP layer produces carries the contract's JSON body
 * `{"ok":false,"error":"<code>","message":"<text>"}` with content-type application/json, on
 * HTTP/1.1 (raw node:net sockets) and HTTP/2 (node:http2, prior knowledge): oversized headers
 * (431), targets (414) and bodies (413), malformed requests (400), unknown routes (404), wrong
 * methods (405, with Allow) and requests that do not arrive in time (408).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorBodySchema } from "../../gen/signals/v1/errors_pb.js";
import { ERROR_CODES, type ErrorCode, errorSpec } from "../../src/errors.ts";
import { expectMatchesOpenApi } from "../support/openapi-contract.ts";
import { type RawAnswer, rawHttp1, rawHttp2 } from "../support/raw-http.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let server: TestServer;
let apiKey: string;

beforeAll(async () => {
  server = await startTestServer({ env: { REQUEST_TIMEOUT: "2", HEADERS_TIMEOUT: "1" } });
  ({ apiKey } = await server.account());
});
afterAll(() => server?.close());

/** Asserts the JSON error answer: status, code, the body's fields in order, the content type. */
function expectJsonError(answer: RawAnswer, status: number, code: ErrorCode): Record<string, unknown> {
  expect({ status: answer.status, end: answer.end }, answer.body.slice(0, 200)).toEqual({ status, end: "answer" });
  expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(Object.keys(body)).toEqual(ErrorBodySchema.fields.map((f) => f.name));
  expect(body).toMatchObject({ ok: false, error: code });
  expect(typeof body.message).toBe("string");
  expect(ERROR_CODES).toContain(body.error);
  expect(errorSpec(code).http).toBe(status);
  return body;
}

const longQuery = `symbols=${"A".repeat(100 * 1024)}`;
const repeated = Array.from({ length: 3_000 }, () => "symbols=BTC").join("&");
/** Every answer to a request with a path is also checked against the OpenAPI document. */
function checked<T extends RawAnswer>(method: string, path: string, answer: T): T {
  if (path.startsWith("/") && answer.status !== null && answer.end === "answer")
    expectMatchesOpenApi(method, path, { ...answer, body: JSON.parse(answer.body) });
  return answer;
}
const h1 = async (head: string, extra: Array<string | Buffer> = []) => {
  const [method = "", path = ""] = head.split("\r\n")[0]!.split(" ");
  return checked(method, path, await rawHttp1(server.port, [head, ...extra]));
};

describe("HTTP/1.1 (raw sockets)", () => {
  it("a 100 KB query string and 3,000 repeated parameters: 414 uri_too_long", async () => {
    expectJsonError(
      await h1(`GET /api/v1/signals?${longQuery} HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\n\r\n`),
      414,
      "uri_too_long",
    );
    expectJsonError(
      await h1(`GET /api/v1/signals?${repeated} HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\n\r\n`),
      414,
      "uri_too_long",
    );
    // Over the target limit (8 KiB) but inside the header block limit: refused before routing.
    const overTarget = await h1(`GET /api/v1/news?symbols=${"B".repeat(9_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectJsonError(overTarget, 414, "uri_too_long");
    // Refused inside the request scope: it has a request id (and an access log line).
    expect(overTarget.headers["x-request-id"]).toMatch(/.+/);
  });

  it("an oversized header block: 431 headers_too_large", async () => {
    expectJsonError(
      await h1(`GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-pad: ${"p".repeat(20_000)}\r\n\r\n`),
      431,
      "headers_too_large",
    );
    const many = Array.from({ length: 2_500 }, (_, i) => `x-h${i}: ${i}`).join("\r\n");
    expectJsonError(await h1(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\n${many}\r\n\r\n`), 431, "headers_too_large");
  });

  it("a declared body over 64 KiB on a REST or unknown path: 413 payload_too_large", async () => {
    expectJsonError(
      await h1(`GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n`),
      413,
      "payload_too_large",
    );
    expectJsonError(
      await h1(`POST /api/v1/nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n`),
      413,
      "payload_too_large",
    );
  });

  it("malformed requests: 400 bad_request", async () => {
    expectJsonError(await h1(`THIS IS NOT HTTP\r\n\r\n`), 400, "bad_request");
    expectJsonError(
      await h1(`GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nBad Header Name: y\r\n\r\n`),
      400,
      "bad_request",
    );
    expectJsonError(
      await h1(
        `GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nContent-Length: ` +
          `5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      ),
      400,
      "bad_request",
    );
    expectJsonError(await h1(`GET * HTTP/1.1\r\nHost: x\r\n\r\n`), 400, "bad_request");
  });

  it("unknown /api/ routes: 404 not_found; wrong methods on a REST route: 405 with Allow", async () => {
    expectJsonError(await h1(`GET /api/v1/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n`), 404, "not_found");
    expectJsonError(await h1(`GET /api/v2/signals HTTP/1.1\r\nHost: x\r\n\r\n`), 404, "not_found");
    for (const path of ["/api/v1/signals", "/api/v1/usage", "/api/v1/news"]) {
      const answer = await h1(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
      expectJsonError(answer, 405, "method_not_allowed");
      expect(answer.headers.allow).toBe("GET");
    }
    const del = await h1(`DELETE /api/v1/signals HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectJsonError(del, 405, "method_not_allowed");
  });

  it(
    "the RPC router's refusals: 405 for GET on an RPC path, 415 for " +
      "a content type no protocol speaks, 404 for an unknown method",
    async () => {
      const get = await h1(`GET /signals.v1.SignalsService/GetSignals HTTP/1.1\r\nHost: x\r\n\r\n`);
      expectJsonError(get, 405, "method_not_allowed");
      expect(get.headers.allow).toBe("POST");
      expectJsonError(
        await h1(
          `POST /signals.v1.SignalsService/GetSignals HTTP/1.1\r\nHost: ` +
            `x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}`,
        ),
        415,
        "unsupported_media_type",
      );
      expectJsonError(
        await h1(
          `POST /signals.v1.SignalsService/Nope HTTP/1.1\r\nHost: x\r\nContent-Type: ` +
            `application/json\r\nContent-Length: 2\r\n\r\n{}`,
        ),
        404,
        "not_found",
      );
    },
  );

  it("a header block or a body that does not arrive in time: 408 request_timeout", async () => {
    const [slowHeaders, slowBody] = await Promise.all([
      h1(`GET /api/v1/signals HTTP/1.1\r\nHost: x\r\n`),
      h1(
        `POST /signals.v1.UsageService/GetUsage HTTP/1.1\r\nHost: x\r\nContent-Type: ` +
          `application/json\r\nContent-Length: 100\r\n\r\n`,
        ["{"],
      ),
    ]);
    expectJsonError(slowHeaders, 408, "request_timeout");
    expectJsonError(slowBody, 408, "request_timeout");
  });
});

describe("HTTP/2 (prior knowledge)", () => {
  const h2 = async (path: string, headers: Record<string, string> = {}, method = "GET") =>
    checked(method, path, await rawHttp2(server.port, { ":method": method, ":path": path, ...headers }));

  it("a 50 KB query string and 3,000 repeated parameters: 414 uri_too_long", async () => {
    expectJsonError(
      await h2(`/api/v1/signals?symbols=${"A".repeat(50 * 1024)}`, { "x-api-key": apiKey }),
      414,
      "uri_too_long",
    );
    expectJsonError(await h2(`/api/v1/signals?${repeated}`, { "x-api-key": apiKey }), 414, "uri_too_long");
  });

  it(
    "one header field over 64 KiB compressed (a 100 KB query): nghttp2 ends " +
      "the stream with COMPRESSION_ERROR before any handler (documented limit)",
    async () => {
      const answer = await h2(`/api/v1/signals?${longQuery}`, { "x-api-key": apiKey });
      expect({ status: answer.status, rstCode: answer.rstCode }).toEqual({ status: null, rstCode: 9 });
    },
  );

  it("an oversized header list: 431 headers_too_large", async () => {
    expectJsonError(await h2("/api/v1/signals", { "x-pad": "p".repeat(20_000) }), 431, "headers_too_large");
    const many = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`x-h${i}`, String(i).padStart(10, "0")]));
    expectJsonError(await h2("/api/v1/usage", many), 431, "headers_too_large");
  });

  it("a declared body over 64 KiB: 413; a target that is not a path: 400", async () => {
    const declared = await rawHttp2(
      server.port,
      { ":method": "POST", ":path": "/api/v1/nothing", "content-length": "100000" },
      { body: "x", endStream: false },
    );
    expectJsonError(declared, 413, "payload_too_large");
    expectJsonError(await h2("//evil.example/api/v1/signals"), 400, "bad_request");
  });

  it("unknown /api/ routes: 404; wrong methods: 405 with Allow (REST and RPC paths); 415 on RPC paths", async () => {
    expectJsonError(await h2("/api/v1/nothing-here"), 404, "not_found");
    expectJsonError(await h2("/signals.v1.SignalsService/GetSignals"), 405, "method_not_allowed");
    const unsupported = await rawHttp2(
      server.port,
      { ":method": "POST", ":path": "/signals.v1.SignalsService/GetSignals", "content-type": "text/plain" },
      { body: "{}" },
    );
    expectJsonError(unsupported, 415, "unsupported_media_type");
    const answer = await h2("/api/v1/signals", {}, "POST");
    expectJsonError(answer, 405, "method_not_allowed");
    expect(answer.headers.allow).toBe("GET");
  });

  it("a request whose body never ends: 408 request_timeout, then the stream is reset", async () => {
    const answer = await rawHttp2(
      server.port,
      { ":method": "POST", ":path": "/signals.v1.UsageService/GetUsage", "content-type": "application/json" },
      { body: "{", endStream: false },
    );
    expectJsonError(answer, 408, "request_timeout");
  });
});
