/** What a caller may do: the Token limits, the free endpoints' rate, the failed-key throttle. */
import { type Parsed, wholeNumber } from "./parse.ts";

export const limitsEnv = {
  DAILY_CAP: wholeNumber(2000, 1, 10_000_000),
  MONTHLY_GRANT: wholeNumber(10_000, 0, 1_000_000_000),
  LOW_BALANCE_PCT: wholeNumber(15, 0, 100),
  MAX_SYMBOLS: wholeNumber(8, 1, 100),
  FAILED_KEY_LIMIT: wholeNumber(100, 1, 1_000_000),
  FAILED_KEY_WINDOW: wholeNumber(60, 1, 24 * 3600),
  FREE_RATE_LIMIT: wholeNumber(60, 1, 1_000_000),
  KEY_LAST_USED_FLUSH_MS: wholeNumber(60_000, 10, 3_600_000),
};

/** The callers' limits. */
export function limitsConfig(env: Parsed<typeof limitsEnv>) {
  return {
    limits: Object.freeze({
      /** Charged calls per account per MYT day. */
      dailyCap: env.DAILY_CAP,
      /** Tokens granted on the 1st of each MYT month (grant bucket reset to this). */
      monthlyGrant: env.MONTHLY_GRANT,
      /** Low-balance notice threshold, percent of the monthly grant. */
      lowBalancePct: env.LOW_BALANCE_PCT,
      /** Symbols accepted per call; the rest are ignored. */
      maxSymbols: env.MAX_SYMBOLS,
    }),
    /** Failed API keys allowed per caller address per failedKeyWindowMs before 429. */
    failedKeyLimit: env.FAILED_KEY_LIMIT,
    failedKeyWindowMs: env.FAILED_KEY_WINDOW * 1000,
    /** Free-endpoint calls (movers, derivatives, news, macro, fundamentals) per API key per minute. */
    freeRateLimit: env.FREE_RATE_LIMIT,
    /** API keys' "last used" times are written at most this often (ms), batched (accounts/key-last-used.ts). */
    keyLastUsedFlushMs: env.KEY_LAST_USED_FLUSH_MS,
  };
}
