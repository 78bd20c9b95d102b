/**
 * The front door of every method authenticated by `x-api-key` (the paid endpoint and the free
 * ones), written once and wrapped around a service implementation once, so REST, Connect, gRPC
 * and gRPC-Web all run it: the caller address's failed-key budget, then the local key checks
 * in the contract's order (401 api_key_required → 401 invalid_api_key for a malformed key),
 * then the method with the key's hash in its context (`callerKey`). Failures to present a
 * valid key are counted against the address; the call's outcome code goes to the request
 * context (access log) and to `record` (metrics).
 *
 * It wraps the implementation rather than being a Connect interceptor because the REST mapping
 * calls the implementation directly, and because the outcome is recorded per protocol, which
 * only the handler context names.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { createContextKey, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { errorCodeOf, serviceError } from "../errors.ts";
import { currentRequest, recordOutcome } from "../request-context.ts";
import { hashApiKey, isWellFormedApiKey } from "./api-key.ts";
import type { FailedKeyThrottle } from "./failed-key-throttle.ts";

export const API_KEY_HEADER = "x-api-key";

export interface ApiKeyGuardOptions {
  /** Budget of failed keys per caller address, shared by every guarded method. */
  readonly throttle?: FailedKeyThrottle;
  /** Everything that follows a key the database accepted (the throttle trusts it, its last use is noted). */
  readonly onAccepted?: (keyHash: string, now: number) => void;
  /** The outcome of every guarded call ("ok" or the error code), for metrics. */
  readonly record?: (method: DescMethod, protocol: string, outcome: string) => void;
}

/**
 * The caller's key once the guard has checked it locally. Only the method knows when the
 * database has accepted the key (the statement that checks it also does the method's work),
 * so the method reports it through `accepted`.
 */
export class CallerKey {
  /** SHA-256 of the presented key, the form the database stores. */
  readonly hash: string;
  private readonly options: ApiKeyGuardOptions;

  constructor(hash: string, options: ApiKeyGuardOptions) {
    this.hash = hash;
    this.options = options;
  }

  /** The database accepted this key at `now`. */
  accepted(now: number): void {
    this.options.onAccepted?.(this.hash, now);
  }
}

const CALLER_KEY = createContextKey<CallerKey | null>(null, { description: "the caller's checked API key" });

/**
 * The key the guard checked for this call; a method served without the guard fails (500) rather than run
 * unauthenticated.
 */
export function callerKey(ctx: HandlerContext): CallerKey {
  const key = ctx.values.get(CALLER_KEY);
  if (key === null) throw new Error(`${ctx.method.parent.typeName}.${ctx.method.name} ran without the API-key guard`);
  return key;
}

/**
 * SHA-256 of a well-formed key, null for anything else (api-key.ts). Computed on every call and
 * never remembered: a map from keys to their hashes would keep callers' keys in plaintext in the
 * process for as long as it lived (heap snapshots, core dumps), a revoked key's too, for ~2.5 %
 * of a billed call's CPU (measured and removed; bench/README.md, "CPU per billed call, seventh step").
 */
export function wellFormedKeyHash(given: string): string | null {
  return isWellFormedApiKey(given) ? hashApiKey(given) : null;
}

type UnaryHandler = (request: unknown, ctx: HandlerContext) => Promise<unknown>;

/**
 * The implementation of `service` with every method behind the guard. Serve the result, and
 * only the result, on every protocol (create-app.ts lists it once for the router and REST).
 */
export function guardedByApiKey<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  options: ApiKeyGuardOptions,
): ServiceImpl<S> {
  const guarded: Record<string, UnaryHandler> = {};
  for (const method of service.methods) {
    if (method.methodKind !== "unary")
      throw new Error(`${service.typeName}.${method.name}: only unary methods take an API key`);
    const handler = (impl as unknown as Record<string, UnaryHandler>)[method.localName];
    if (typeof handler !== "function") throw new Error(`${service.typeName}.${method.name} is not implemented`);
    guarded[method.localName] = (request, ctx) =>
      withApiKey(ctx, method, options, () => handler.call(impl, request, ctx));
  }
  return guarded as unknown as ServiceImpl<S>;
}

async function withApiKey<T>(
  ctx: HandlerContext,
  method: DescMethod,
  options: ApiKeyGuardOptions,
  call: () => Promise<T>,
): Promise<T> {
  const { throttle } = options;
  const peer = currentRequest()?.peer ?? "unknown";
  const given = ctx.requestHeader.get(API_KEY_HEADER)?.trim() ?? "";
  const keyHash = wellFormedKeyHash(given);
  let outcome = "ok";
  try {
    const wait = given === "" ? 0 : (throttle?.blockedFor(peer, keyHash) ?? 0);
    if (wait > 0) throw tooManyFailedKeys(wait);
    if (given === "") throw serviceError("api_key_required");
    if (keyHash === null) throw serviceError("invalid_api_key");
    ctx.values.set(CALLER_KEY, new CallerKey(keyHash, options));
    return await call();
  } catch (err) {
    outcome = errorCodeOf(err);
    if (outcome === "invalid_api_key" && throttle) {
      // The 401 is given only when this failure is within the address's budget, counted in
      // the database (exact across processes). If the database cannot count it, the 401
      // stands: a guess cannot be checked without the database either.
      const overBy = await throttle.recordFailure(peer).catch(() => 0);
      if (overBy > 0) {
        outcome = "rate_limited";
        throw tooManyFailedKeys(overBy);
      }
    }
    throw err;
  } finally {
    recordOutcome(outcome);
    options.record?.(method, ctx.protocolName, outcome);
  }
}

function tooManyFailedKeys(waitMs: number) {
  return serviceError("rate_limited", "Too many requests with invalid API keys from this address; retry later.", {
    "retry-after": String(Math.ceil(waitMs / 1000)),
  });
}
