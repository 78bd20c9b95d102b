/**
 * The access check of a free call: ONE statement, `free_call(key_hash, now, limit, window)`
 * (migration 0010), which checks the key and the subscription (any plan) and counts the call
 * in the key's fixed window, correct across server processes. It never touches balances, the
 * ledger or the daily cap of the paid endpoint.
 */
import type { HandlerContext } from "@connectrpc/connect";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { rateLimitedHeaders, rateLimitHeaders } from "../signals/rate-limit-headers.ts";

export type FreeCallOutcome = "ok" | "invalid_api_key" | "subscription_inactive" | "rate_limited";

/** Length of the free-call window: FREE_RATE_LIMIT is per minute. */
export const FREE_WINDOW_MS = 60_000;

export interface FreeCallResult {
  outcome: FreeCallOutcome;
  /** Calls counted in the key's current window (after this one when admitted); null before the window check. */
  calls: number | null;
  /** Start of that window, epoch ms; null before the window check. */
  windowStart: number | null;
}

const FREE_CALL_SQL =
  "SELECT outcome, calls, window_start FROM free_call($1::text, $2::timestamptz, $3::integer, $4::integer)";

/** Checks the key and the subscription and counts the call, in one round trip. */
export async function freeCall(
  handle: DbHandle,
  keyHash: string,
  now: number,
  limit: number,
  windowMs = FREE_WINDOW_MS,
): Promise<FreeCallResult> {
  const [row] = await handle.prepared<{
    outcome: FreeCallOutcome;
    calls: number | string | null;
    window_start: string | Date | null;
  }>(FREE_CALL_SQL, [keyHash, new Date(now).toISOString(), limit, windowMs]);
  if (!row) throw new Error("free_call returned no row");
  return {
    outcome: row.outcome,
    calls: row.calls === null ? null : Number(row.calls),
    windowStart: row.window_start === null ? null : new Date(row.window_start).getTime(),
  };
}

/**
 * IETF RateLimit headers of the free-call budget: the limit, what is left of it in this
 * window, and the seconds until the window ends (at least 1).
 */
export function freeRateLimitHeaders(
  limit: number,
  calls: number,
  windowStart: number,
  now: number,
  windowMs = FREE_WINDOW_MS,
): Record<string, string> {
  const untilEnd = Math.min(windowMs, Math.max(0, windowStart + windowMs - now));
  return rateLimitHeaders(limit, calls, untilEnd);
}

/** Deletes window rows that ended more than a day ago (keys that stopped calling, regenerated keys). */
export async function purgeFreeCallWindows(handle: DbHandle, now: number): Promise<number> {
  const rows = await handle.prepared(`DELETE FROM free_call_windows WHERE window_start < $1::timestamptz RETURNING 1`, [
    new Date(now - 24 * 3_600_000).toISOString(),
  ]);
  return rows.length;
}

/**
 * Turns a free_call outcome into the call's answer: on "ok" the RateLimit headers are set on
 * the response and returned; otherwise the catalogue error is thrown (429 with Retry-After).
 */
export function admitFreeCall(
  ctx: HandlerContext,
  result: FreeCallResult,
  limit: number,
  now: number,
  windowMs = FREE_WINDOW_MS,
): Record<string, string> {
  const headers =
    result.calls === null || result.windowStart === null
      ? {}
      : freeRateLimitHeaders(limit, result.calls, result.windowStart, now, windowMs);
  switch (result.outcome) {
    case "ok":
      for (const [name, value] of Object.entries(headers)) ctx.responseHeader.set(name, value);
      return headers;
    case "rate_limited": {
      const reset = headers["ratelimit-reset"] ?? "60";
      throw serviceError(
        "rate_limited",
        `Free endpoints allow ${limit} calls per minute per API key; retry in ${reset} s.`,
        rateLimitedHeaders(headers),
      );
    }
    default:
      throw serviceError(result.outcome);
  }
}
