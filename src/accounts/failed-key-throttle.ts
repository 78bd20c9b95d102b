/**
 * A bounded budget of failed API keys per caller address (an IPv4 address or an IPv6 /64, so
 * an IPv6 caller cannot rotate addresses for a fresh budget), exact across server processes:
 * a count kept per process would grant one budget per process.
 *
 * Each invalid key is counted in ONE statement in the database (`failed_key_windows`, a fixed
 * window per address) that returns the count after it: the caller gets its 401 only when that
 * count is within the budget, and 429 otherwise. So no more than `limit` calls per window are
 * ever told "invalid key", whatever the number of processes or the concurrency. A valid key
 * never writes here: the paid path's happy case costs nothing.
 *
 * Once the database says an address is over budget, this process remembers it until the
 * window ends and answers that address 429 before any lookup, so a flood stops reaching the
 * database. A key that recently succeeded (in this process) passes even then: a valid caller
 * behind the same NAT is not locked out. In memory, bounded.
 */
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { normaliseAddress } from "./address-group.ts";

export interface ThrottleOptions {
  /** Failed keys allowed per address per window. */
  readonly limit: number;
  readonly windowMs: number;
  readonly clock: Clock;
  readonly db: DbHandle;
}

/** Addresses and trusted keys remembered at most (oldest forgotten first). */
const MAX_ENTRIES = 100_000;
/**
 * How long a key that succeeded passes a blocked address: long enough for a regular caller, short enough to forget a
 * stolen key's history.
 */
const TRUST_MS = 24 * 3_600_000;

/**
 * Counts one failure of `address` in its window, starting a new window when the old one has
 * ended; returns the count after this failure and the window's start. Concurrent calls for
 * one address serialise on the row, so the counts they return are 1, 2, 3, … exactly.
 */
const COUNT_FAILURE_SQL = `
INSERT INTO failed_key_windows AS w (address, window_start, failures) VALUES ($1::text, $2::timestamptz, 1)
ON CONFLICT (address) DO UPDATE SET
  window_start = CASE WHEN w.window_start <= $2::timestamptz - make_interval(secs => $3::integer / 1000.0)
  THEN excluded.window_start ELSE w.window_start END,
  failures     = CASE WHEN w.window_start <= $2::timestamptz - make_interval(secs => $3::integer / 1000.0) THEN 1
  ELSE w.failures + 1 END
RETURNING failures, window_start`;

export class FailedKeyThrottle {
  private readonly options: ThrottleOptions;
  /** Addresses the database found over budget, with the end of that window (insertion order = age). */
  private readonly blockedUntil = new Map<string, number>();
  /** Key hashes that recently passed the charge, by when (insertion order = age). */
  private readonly trusted = new Map<string, number>();

  constructor(options: ThrottleOptions) {
    this.options = options;
  }

  /**
   * Milliseconds this address must wait before trying this key, from what this process already
   * knows (no database query); 0 when it may try now.
   */
  blockedFor(address: string, keyHash: string | null): number {
    const group = normaliseAddress(address);
    const until = this.blockedUntil.get(group);
    if (until === undefined) return 0;
    const now = this.options.clock();
    if (now >= until) {
      this.blockedUntil.delete(group);
      return 0;
    }
    if (keyHash !== null && this.isTrusted(keyHash, now)) return 0;
    return until - now;
  }

  /**
   * Counts a failed key from `address` in the database. Returns 0 when it was within the budget
   * (answer 401), else the milliseconds until the window ends (answer 429).
   */
  async recordFailure(address: string): Promise<number> {
    const group = normaliseAddress(address);
    const now = this.options.clock();
    const [row] = await this.options.db.prepared<{ failures: number | string; window_start: string | Date }>(
      COUNT_FAILURE_SQL,
      [group, new Date(now).toISOString(), this.options.windowMs],
    );
    if (!row || Number(row.failures) <= this.options.limit) return 0;
    const until = new Date(row.window_start).getTime() + this.options.windowMs;
    this.blockedUntil.delete(group);
    this.blockedUntil.set(group, until);
    forgetOldest(this.blockedUntil);
    return Math.max(1, until - now);
  }

  recordSuccess(keyHash: string): void {
    this.trusted.delete(keyHash);
    this.trusted.set(keyHash, this.options.clock());
    forgetOldest(this.trusted);
  }

  private isTrusted(keyHash: string, now: number): boolean {
    const at = this.trusted.get(keyHash);
    return at !== undefined && now - at < TRUST_MS;
  }
}

/** Deletes windows that ended (the purge timer). */
export async function purgeFailedKeyWindows(handle: DbHandle, now: number, windowMs: number): Promise<number> {
  const rows = await handle.prepared(
    `DELETE FROM failed_key_windows WHERE window_start < $1::timestamptz RETURNING 1`,
    [new Date(now - windowMs).toISOString()],
  );
  return rows.length;
}

function forgetOldest<K, V>(map: Map<K, V>): void {
  while (map.size > MAX_ENTRIES) map.delete(map.keys().next().value as K);
}
