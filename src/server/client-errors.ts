/**
 * Malformed RPC request bodies are the caller's fault, so they are INVALID_ARGUMENT (HTTP 400),
 * not INTERNAL (HTTP 500). @connectrpc/connect 2.x reports a protobuf body that does not parse
 * ("parse binary: illegal tag ...") and an envelope flagged as compressed without a compression
 * ("received compressed envelope ...", "invalid envelope ...") as INTERNAL, with the decoder's
 * message, before any interceptor runs (found by test/reliability/fuzz.test.ts). This wrapper
 * rewrites exactly those answers, for every protocol: Connect unary (HTTP status and JSON body),
 * gRPC (grpc-status in headers or trailers) and gRPC-Web (the trailer frame in the body).
 */
import { type RequestHandler, RPC_PATH } from "./request-handler.ts";

/** Messages of connect-es errors that describe the request, not the server. */
const CLIENT_FAULT = /^(parse binary:|received compressed envelope|invalid envelope)/;
const MESSAGE = "The request message could not be parsed.";

type Headers = Record<string, string | string[] | number | undefined>;

function decoded(message: unknown): string {
  try {
    return decodeURIComponent(String(message ?? ""));
  } catch {
    return String(message ?? "");
  }
}

/** Rewrites grpc-status 13 with a client-fault message in a header/trailer object, in place. */
function fixGrpcStatus(headers: Headers): boolean {
  if (String(headers["grpc-status"]) !== "13" || !CLIENT_FAULT.test(decoded(headers["grpc-message"]))) return false;
  headers["grpc-status"] = "3";
  headers["grpc-message"] = encodeURIComponent(MESSAGE);
  return true;
}

/** A gRPC-Web trailer frame (flag 0x80) with grpc-status 13 and a client-fault message, rewritten. */
function fixGrpcWebTrailers(chunk: Uint8Array): Uint8Array | null {
  if (chunk.length < 5 || chunk[0] !== 0x80) return null;
  const text = Buffer.from(chunk.subarray(5)).toString("latin1");
  const status = /grpc-status:\s*(\d+)/i.exec(text)?.[1];
  const message = decoded(/grpc-message:\s*([^\r\n]*)/i.exec(text)?.[1]);
  if (status !== "13" || !CLIENT_FAULT.test(message)) return null;
  const body = Buffer.from(`grpc-status: 3\r\ngrpc-message: ${encodeURIComponent(MESSAGE)}\r\n`, "latin1");
  const frame = Buffer.alloc(5 + body.length);
  frame[0] = 0x80;
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

export function clientFaultsAsInvalidArgument(handler: RequestHandler): RequestHandler {
  return (req, res) => {
    if (req.method !== "POST" || !RPC_PATH.test((req.url ?? "").split("?")[0]!)) return handler(req, res);
    const r = res as unknown as {
      writeHead: (status: number, headers?: Headers) => unknown;
      write: (chunk: Uint8Array, ...rest: unknown[]) => boolean;
      addTrailers: (trailers: Headers) => void;
      end: (...args: unknown[]) => unknown;
    };
    const writeHead = r.writeHead.bind(res);
    const write = r.write.bind(res);
    const addTrailers = r.addTrailers.bind(res);
    const end = r.end.bind(res);
    // A Connect unary error: its status waits for its (single) body chunk.
    let heldHead: [number, Headers] | null = null;
    r.writeHead = (status, headers = {}) => {
      fixGrpcStatus(headers);
      const type = String(headers["content-type"] ?? "");
      if (status === 500 && type.startsWith("application/json")) {
        heldHead = [status, headers];
        return res;
      }
      return writeHead(status, headers);
    };
    r.write = (chunk, ...rest) => {
      if (heldHead !== null) {
        let [status, headers] = heldHead;
        heldHead = null;
        try {
          const body = JSON.parse(Buffer.from(chunk).toString("utf8")) as { code?: string; message?: string };
          if (body.code === "internal" && CLIENT_FAULT.test(body.message ?? "")) {
            status = 400;
            chunk = Buffer.from(JSON.stringify({ code: "invalid_argument", message: MESSAGE }));
            if (headers["content-length"] !== undefined)
              headers = { ...headers, "content-length": String(chunk.length) };
          }
        } catch {
          // not a Connect error body: leave it alone
        }
        writeHead(status, headers);
      }
      return write(fixGrpcWebTrailers(chunk) ?? chunk, ...rest);
    };
    r.addTrailers = (trailers) => {
      fixGrpcStatus(trailers);
      addTrailers(trailers);
    };
    r.end = (...args) => {
      if (heldHead !== null) {
        writeHead(...heldHead);
        heldHead = null;
      }
      return end(...args);
    };
    handler(req, res);
  };
}
