/**
 * Retry timing shared by every part that retries: the exponential backoff (with its jitter) and
 * the reading of an HTTP Retry-After header. One home, so a retry loop never restates the rule.
 */

/**
 * How a delay is spread below its exponential ceiling: "full" anywhere in [0, ceiling] (spreads
 * many clients that failed together the most), "equal" in [ceiling/2, ceiling] (never sooner than
 * half, for loops whose callers rely on a lower bound), "none" exactly the ceiling.
 */
export type Jitter = "full" | "equal" | "none";

/**
 * Delay (whole ms) before the next try after `attempt` failed tries: the ceiling
 * `base · 2^(attempt−1)`, capped at `capMs`, spread by `jitter`. Attempts below 1 count as 1; a
 * huge attempt count stays finite.
 */
export function backoffMs(
  attempt: number,
  baseMs: number,
  capMs: number,
  jitter: Jitter = "full",
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  if (jitter === "none") return ceiling;
  if (jitter === "equal") return Math.round(ceiling / 2 + random() * (ceiling / 2));
  return Math.round(random() * ceiling);
}

/**
 * A Retry-After header value as milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3);
 * null when absent or unreadable, so "no header" never reads as "retry at once".
 */
export function retryAfterMs(header: string | null | undefined, now: number = Date.now()): number | null {
  const value = header?.trim();
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  if (!/[a-z]/i.test(value)) return null; // "-1" would otherwise parse as a year
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
