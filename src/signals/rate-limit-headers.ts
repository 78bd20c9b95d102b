/**
 * The IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers), written once for both
 * budgets that send them: the paid endpoint's daily cap and the free endpoints' per-minute window.
 */

/** The limit, what is left of it, and the whole seconds until it resets (at least 1). */
export function rateLimitHeaders(limit: number, used: number, untilResetMs: number): Record<string, string> {
  return {
    "ratelimit-limit": String(limit),
    "ratelimit-remaining": String(Math.max(0, limit - used)),
    "ratelimit-reset": String(Math.max(1, Math.ceil(untilResetMs / 1000))),
  };
}

/** The same headers on a refusal, with Retry-After equal to the reset. */
export function rateLimitedHeaders(headers: Record<string, string>): Record<string, string> {
  return { ...headers, "retry-after": headers["ratelimit-reset"] ?? "60" };
}
