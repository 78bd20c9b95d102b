/**
 * The front door of every call authenticated by `x-api-key` (the paid endpoint and the free
 * ones): the caller address's failed-key budget, then the local key checks in the contract's
 * order (401 api_key_required → 401 invalid_api_key for a malformed key), then the call itself
 * with the key's hash. Failures to present a valid key are counted against the address; the
 * call's outcome code goes to the request context (access log) and to `record` (metrics).
 */
import type { HandlerContext } from "@connectrpc/connect";
import { errorCodeOf, serviceError } from "../errors.ts";
import { currentRequest, recordOutcome } from "../request-context.ts";
import { hashApiKey, isWellFormedApiKey } from "./api-key.ts";
import type { FailedKeyThrottle } from "./failed-key-throttle.ts";

export const API_KEY_HEADER = "x-api-key";

/**
 * What a service calls once the database has accepted a call's key (only the call knows when
 * that is): one callback for everything that follows an accepted key — the failed-key throttle
 * trusts the key, and its "last used" time is noted (composed in server/create-app.ts).
 */
export type KeyAccepted = (keyHash: string, now: number) => void;

/**
 * Runs `call` with the hash of a present, well-formed key. `call` reports a key it found valid
 * through its KeyAccepted itself.
 */
export async function withApiKey<T>(
  ctx: HandlerContext,
  throttle: FailedKeyThrottle | undefined,
  record: (outcome: string) => void,
  call: (keyHash: string) => Promise<T>,
): Promise<T> {
  const peer = currentRequest()?.peer ?? "unknown";
  const given = ctx.requestHeader.get(API_KEY_HEADER)?.trim() ?? "";
  const keyHash = isWellFormedApiKey(given) ? hashApiKey(given) : null;
  let outcome = "ok";
  try {
    const wait = given === "" ? 0 : (throttle?.blockedFor(peer, keyHash) ?? 0);
    if (wait > 0) throw tooManyFailedKeys(wait);
    if (given === "") throw serviceError("api_key_required");
    if (keyHash === null) throw serviceError("invalid_api_key");
    return await call(keyHash);
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
    record(outcome);
  }
}

function tooManyFailedKeys(waitMs: number) {
  return serviceError("rate_limited", "Too many requests with invalid API keys from this address; retry later.", { "retry-after": String(Math.ceil(waitMs / 1000)) });
}
