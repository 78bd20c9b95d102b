/**
 * A bounded budget of failed API keys per caller address. A flood of guesses from one address
 * is answered 429 without touching the database once the budget is spent, until the window
 * ends. Valid callers are not hurt: a key that recently succeeded passes even from a blocked
 * address (e.g. behind the same NAT), and other addresses are unaffected. Per process, in
 * memory, with a hard cap on the addresses remembered.
 */
import type { Clock } from "../clock.ts";

export interface ThrottleOptions {
  /** Failed keys allowed per address per window. */
  readonly limit: number;
  readonly windowMs: number;
  readonly clock: Clock;
}

interface Window {
  start: number;
  failures: number;
}

/** Addresses and trusted keys remembered at most (oldest forgotten first). */
const MAX_ENTRIES = 100_000;

export class FailedKeyThrottle {
  private readonly options: ThrottleOptions;
  private readonly windows = new Map<string, Window>();
  /** Key hashes that recently passed the charge, by when (insertion order = age). */
  private readonly trusted = new Map<string, number>();

  constructor(options: ThrottleOptions) {
    this.options = options;
  }

  /** Milliseconds this address must wait before trying this key; 0 when it may try now. */
  blockedFor(address: string, keyHash: string | null): number {
    const window = this.windows.get(address);
    if (!window) return 0;
    const now = this.options.clock();
    const ends = window.start + this.options.windowMs;
    if (now >= ends) {
      this.windows.delete(address);
      return 0;
    }
    if (window.failures < this.options.limit) return 0;
    if (keyHash !== null && this.isTrusted(keyHash, now)) return 0;
    return ends - now;
  }

  recordFailure(address: string): void {
    const now = this.options.clock();
    const window = this.windows.get(address);
    if (window && now < window.start + this.options.windowMs) {
      window.failures++;
      return;
    }
    this.windows.delete(address);
    this.windows.set(address, { start: now, failures: 1 });
    forgetOldest(this.windows);
  }

  recordSuccess(keyHash: string): void {
    this.trusted.delete(keyHash);
    this.trusted.set(keyHash, this.options.clock());
    forgetOldest(this.trusted);
  }

  private isTrusted(keyHash: string, now: number): boolean {
    const at = this.trusted.get(keyHash);
    // Trust lasts a day: long enough for a regular caller, short enough to forget stolen keys' history.
    return at !== undefined && now - at < 24 * 3600 * 1000;
  }
}

function forgetOldest<K, V>(map: Map<K, V>): void {
  while (map.size > MAX_ENTRIES) map.delete(map.keys().next().value as K);
}
