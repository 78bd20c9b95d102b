/**
 * The contract's error body for what the HTTP layer refuses before any route runs, on HTTP/1.1
 * and HTTP/2 alike: `{"ok":false,"error":"<code>","message":"<text>"}` with
 * `content-type: application/json`, never Node's empty default answers.
 *
 *  - HTTP/1.1 parser errors (the `clientError` event): a header block over the limit is 431
 *    `headers_too_large`, or 414 `uri_too_long` when the limit was crossed inside the request
 *    line (a 100 KB query string); a request that did not arrive in time is 408
 *    `request_timeout`; anything else the parser refuses is 400 `bad_request`.
 *  - Checked per request before routing, both protocols: a request target over `maxUrlBytes`
 *    is 414; an HTTP/2 header list over the header limit (RFC 9113 §6.5.2 size: name + value +
 *    32 per field) is 431; a declared body over `maxBodyBytes` on a non-RPC path is 413
 *    `payload_too_large` (RPC paths have their own limit in the Connect adapter).
 *  - The Connect router's own refusals on RPC paths (405 for a method other than POST, 415 for
 *    a content type no protocol speaks), which it sends with an empty body, get the JSON body.
 *  - An HTTP/2 request that does not arrive in time is answered 408, then the stream is reset
 *    with NO_ERROR (RFC 9113 §8.1), unless its answer has already begun.
 */
import { randomUUID } from "node:crypto";
import type http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import { type ErrorCode, errorBodyOf, errorSpec } from "../errors.ts";
import { type RequestHandler, RPC_PATH } from "./request-handler.ts";

/** Longest request target (path and query) answered normally. */
export const DEFAULT_MAX_URL_BYTES = 8 * 1024;
/** Largest declared body on a non-RPC path (REST and the web forms). */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

/** The error body as bytes, and its headers. */
export function errorBody(code: ErrorCode, message?: string): { status: number; body: Buffer } {
  return { status: errorSpec(code).http, body: Buffer.from(JSON.stringify(errorBodyOf(code, message))) };
}

function answerFor(err: NodeJS.ErrnoException & { bytesParsed?: number; rawPacket?: Buffer }): {
  code: ErrorCode;
  message?: string;
} {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW": {
      // The limit was crossed before the request line ended: the target itself is too long.
      const seen = err.rawPacket?.subarray(0, err.bytesParsed ?? err.rawPacket.length);
      const inRequestLine =
        seen !== undefined && /^[A-Z]+ /.test(seen.subarray(0, 16).toString("latin1")) && !seen.includes("\r\n");
      return inRequestLine ? { code: "uri_too_long" } : { code: "headers_too_large" };
    }
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { code: "payload_too_large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "request_timeout" };
    default:
      return { code: "bad_request", message: "The request is not valid HTTP." };
  }
}

/**
 * The HTTP/1.1 server's `clientError` listener: answers with the JSON error body when no
 * answer to this connection's current request has begun (as Node's default does), then closes.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: net.Socket): void {
  const inFlight = (socket as net.Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (err.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { code, message } = answerFor(err);
  const { status, body } = errorBody(code, message);
  const head =
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Error"}\r\n` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${body.length}\r\ncache-control: no-store\r\n` +
    // No request was parsed, so the request scope never ran: a new id, as it would have given.
    `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n`;
  socket.end(Buffer.concat([Buffer.from(head, "latin1"), body]), () => socket.destroy());
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  413: "Content Too Large",
  414: "URI Too Long",
  431: "Request Header Fields Too Large",
};

/** Writes the error body on a request the handler will not see. */
function refuse(res: Parameters<RequestHandler>[1], code: ErrorCode, message?: string): void {
  const { status, body } = errorBody(code, message);
  (res as http.ServerResponse).writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(body.length),
    "cache-control": "no-store",
    // HTTP/1.1: the rest of an oversized request is not read; the connection cannot be reused.
    ...("stream" in res ? {} : { connection: "close" }),
  });
  res.end(body);
}

/** RFC 9113 §6.5.2 size of an HTTP/2 header list (pseudo-headers included). */
function headerListSize(rawHeaders: string[]): number {
  let size = 0;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) size += rawHeaders[i]!.length + rawHeaders[i + 1]!.length + 32;
  return size;
}

export interface RequestLimits {
  readonly maxHeaderBytes: number;
  readonly maxUrlBytes?: number;
  readonly maxBodyBytes?: number;
}

/** Wraps a handler with the request-level size checks above. */
export function withRequestLimits(handler: RequestHandler, limits: RequestLimits): RequestHandler {
  const maxUrl = limits.maxUrlBytes ?? DEFAULT_MAX_URL_BYTES;
  const maxBody = limits.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return (req, res) => {
    const url = req.url ?? "/";
    if (url.length > maxUrl)
      return refuse(res, "uri_too_long", `The request target is ${url.length} bytes; the limit is ${maxUrl}.`);
    if (req.httpVersionMajor === 2 && headerListSize(req.rawHeaders) > limits.maxHeaderBytes)
      return refuse(res, "headers_too_large", `The header list is over ${limits.maxHeaderBytes} bytes.`);
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > maxBody && !RPC_PATH.test(url.split("?")[0]!))
      return refuse(res, "payload_too_large", `The body is over ${maxBody} bytes.`);
    handler(req, res);
  };
}

/** Answers an HTTP/2 request that did not arrive in time with 408, then resets its stream. */
export function answerStreamTimeout(stream: http2.ServerHttp2Stream, requestId?: string): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(http2.constants.NGHTTP2_CANCEL);
    return;
  }
  const { status, body } = errorBody("request_timeout");
  stream.respond({
    ":status": status,
    "content-type": "application/json; charset=utf-8",
    "content-length": String(body.length),
    "cache-control": "no-store",
    "x-request-id": requestId || randomUUID(),
  });
  stream.end(body, () => {
    if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  });
}

type NodeHeaders = Record<string, string | string[] | number | undefined>;

/**
 * Gives the Connect router's bodiless 405 / 415 answers on RPC paths the JSON error body (they
 * come before any RPC protocol is chosen, so no protocol's error format applies).
 */
export function withJsonRouterErrors(handler: RequestHandler): RequestHandler {
  return (req, res) => {
    if (!RPC_PATH.test((req.url ?? "").split("?")[0]!)) return handler(req, res);
    const r = res as unknown as {
      writeHead: (status: number, headers?: NodeHeaders) => unknown;
      end: (...args: unknown[]) => unknown;
    };
    const writeHead = r.writeHead.bind(res);
    const end = r.end.bind(res);
    let replacement: Buffer | null = null;
    r.writeHead = (status, headers = {}) => {
      if ((status !== 405 && status !== 415) || headers["content-type"] !== undefined)
        return writeHead(status, headers);
      const { body } = errorBody(
        status === 405 ? "method_not_allowed" : "unsupported_media_type",
        status === 405 ? "RPC methods are called with POST." : undefined,
      );
      replacement = body;
      return writeHead(status, {
        ...headers,
        ...(status === 405 ? { allow: "POST" } : {}),
        "content-type": "application/json; charset=utf-8",
        "content-length": String(body.length),
        "cache-control": "no-store",
      });
    };
    r.end = (...args) => (replacement === null ? end(...args) : end(replacement));
    handler(req, res);
  };
}
