/**
 * The catalogue of every error a caller can see: stable machine code, HTTP status,
 * Connect/gRPC code and default message. One exhaustive switch maps codes; anything not in
 * the catalogue becomes `internal` and is logged, never leaked.
 */

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";

/** Every machine code a caller can see, in one list (the OpenAPI document's enum reads it). */
export const ERROR_CODES = [
  "api_key_required",
  "invalid_api_key",
  "node_tier_required",
  "subscription_inactive",
  "insufficient_credits",
  "rate_limited",
  "bad_request",
  "not_found",
  "method_not_allowed",
  "request_timeout",
  "payload_too_large",
  "uri_too_long",
  "headers_too_large",
  "unsupported_media_type",
  "conflict",
  "idempotency_key_reused",
  "unauthorized",
  "unavailable",
  "internal",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Domain of the google.rpc.ErrorInfo detail. */
export const ERROR_DOMAIN = "signals.v1";
/** Trailer (gRPC) / header (Connect) that repeats the machine code for simple clients. */
export const ERROR_CODE_HEADER = "x-error-code";

interface ErrorSpec {
  readonly http: number;
  readonly connect: Code;
  readonly message: string;
}

/** The contract's error body: `{"ok":false,"error":"<code>","message":"<text>"}`. */
export interface ErrorBody {
  readonly ok: false;
  readonly error: ErrorCode;
  readonly message: string;
}

/** The error body of a code, with the catalogue's wording unless a message is given. */
export function errorBodyOf(code: ErrorCode, message?: string): ErrorBody {
  return { ok: false, error: code, message: message ?? errorSpec(code).message };
}

/** Exhaustive mapping from machine code to transport codes and default wording. */
export function errorSpec(code: ErrorCode): ErrorSpec {
  switch (code) {
    case "api_key_required":
      return { http: 401, connect: Code.Unauthenticated, message: "Send your API key in the x-api-key header." };
    case "invalid_api_key":
      return {
        http: 401,
        connect: Code.Unauthenticated,
        message: "The API key is not valid (unknown, malformed or regenerated).",
      };
    case "node_tier_required":
      return {
        http: 403,
        connect: Code.PermissionDenied,
        message: "The signals API is available on the node and founding-seat plans only.",
      };
    case "subscription_inactive":
      return {
        http: 403,
        connect: Code.PermissionDenied,
        message: "Your subscription is not active; renew it to use this key again.",
      };
    case "insufficient_credits":
      return {
        http: 402,
        connect: Code.ResourceExhausted,
        message: "No Tokens left: the monthly grant and Token packs are used up.",
      };
    case "rate_limited":
      return {
        http: 429,
        connect: Code.ResourceExhausted,
        message: "Daily call limit reached; it resets at 00:00 Malaysia time (UTC+8).",
      };
    case "bad_request":
      return { http: 400, connect: Code.InvalidArgument, message: "The request is not valid." };
    case "not_found":
      return { http: 404, connect: Code.NotFound, message: "Not found." };
    case "method_not_allowed":
      return { http: 405, connect: Code.Unimplemented, message: "Method not allowed." };
    case "request_timeout":
      return { http: 408, connect: Code.DeadlineExceeded, message: "The request did not arrive in time." };
    case "payload_too_large":
      return { http: 413, connect: Code.ResourceExhausted, message: "The request is too large." };
    case "uri_too_long":
      return {
        http: 414,
        connect: Code.ResourceExhausted,
        message: "The request target (path and query) is too long.",
      };
    case "headers_too_large":
      return { http: 431, connect: Code.ResourceExhausted, message: "The request's header block is too large." };
    case "unsupported_media_type":
      return {
        http: 415,
        connect: Code.InvalidArgument,
        message: "Unsupported content-type for an RPC: use a Connect, gRPC or gRPC-Web content type.",
      };
    case "conflict":
      return { http: 409, connect: Code.AlreadyExists, message: "Already exists." };
    case "idempotency_key_reused":
      return {
        http: 422,
        connect: Code.FailedPrecondition,
        message: "This Idempotency-Key was used for a different request (other symbols or timeframe).",
      };
    case "unauthorized":
      return { http: 401, connect: Code.Unauthenticated, message: "A valid bearer token is required." };
    case "unavailable":
      return {
        http: 503,
        connect: Code.Unavailable,
        message: "The service is temporarily unavailable; retry shortly.",
      };
    case "internal":
      return { http: 500, connect: Code.Internal, message: "Internal error." };
  }
}

/** Builds the ConnectError for a catalogue code, with the ErrorInfo detail and code trailer. */
export function serviceError(code: ErrorCode, message?: string, headers?: Record<string, string>): ConnectError {
  const spec = errorSpec(code);
  const metadata = new Headers(headers);
  metadata.set(ERROR_CODE_HEADER, code);
  return new ConnectError(message ?? spec.message, spec.connect, metadata, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: code, domain: ERROR_DOMAIN }) },
  ]);
}

/** Recovers the machine code from any thrown value (ConnectError with our detail, or not). */
export function errorCodeOf(err: unknown): ErrorCode {
  if (err instanceof ConnectError) {
    const info = err.findDetails(ErrorInfoSchema).find((d) => d.domain === ERROR_DOMAIN);
    if (info) return info.reason as ErrorCode;
    switch (err.code) {
      case Code.InvalidArgument:
        return "bad_request";
      case Code.NotFound:
        return "not_found";
      case Code.Unavailable:
        return "unavailable";
      case Code.Unauthenticated:
        return "unauthorized";
      default:
        return "internal";
    }
  }
  return "internal";
}
