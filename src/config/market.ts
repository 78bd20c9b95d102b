/** The market data the server holds: when a coin is stale, catching up, the demo feed and account. */
import { flag, type Parsed, wholeNumber } from "./parse.ts";

export const marketEnv = {
  DEMO_ACCOUNT: flag,
  STALE_AFTER: wholeNumber(900, 1, 365 * 24 * 3600),
  CATCH_UP_MS: wholeNumber(1000, 1, 60_000),
  DEMO_FEED: flag,
};

/** The market's settings; the demo defaults are on for the embedded database (`databaseUrl` null). */
export function marketConfig(env: Parsed<typeof marketEnv>, databaseUrl: string | null) {
  return {
    /** Create a demo node account on first start (default: on for the embedded database). */
    demoAccount: env.DEMO_ACCOUNT ?? databaseUrl === null,
    /** A coin whose feed has been silent longer than this (ms) is answered `stale`. */
    staleAfterMs: env.STALE_AFTER * 1000,
    /**
     * How long a paid call waits for this process to catch up with a market version the
     * store already holds (ms); past it the call is answered 503 and not charged.
     */
    catchUpMs: env.CATCH_UP_MS,
    /** Run the built-in demo feed (seeded random walk) for a few coins. */
    demoFeed: env.DEMO_FEED ?? databaseUrl === null,
  };
}
