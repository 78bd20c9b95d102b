/** Where the data lives: Postgres (DATABASE_URL) or the embedded PGlite in DATA_DIR. */
import path from "node:path";
import { optionalText, type Parsed, wholeNumber } from "./parse.ts";

export const databaseEnv = {
  DATABASE_URL: optionalText.refine(
    (v) => v === undefined || /^postgres(ql)?:\/\//.test(v),
    "must start with postgres:// or postgresql://",
  ),
  DATA_DIR: optionalText,
  DB_POOL_SIZE: wholeNumber(10, 1, 500),
  CHARGE_GROUP_WAIT_MS: wholeNumber(5, 0, 1000),
  CHARGE_RESOLVE_MS: wholeNumber(10_000, 1, 600_000),
  DB_SILENCE_MS: wholeNumber(5_000, 100, 60_000),
  // Below a second it would end legitimate transactions of a loaded process between statements.
  DB_IDLE_IN_TRANSACTION_MS: wholeNumber(15_000, 0, 3_600_000).refine(
    (v) => v === 0 || v >= 1_000,
    "must be 0 (not sent) or at least 1000",
  ),
};

/** The database's settings. */
export function databaseConfig(env: Parsed<typeof databaseEnv>) {
  return {
    /** postgres:// URL; null selects embedded PGlite in dataDir. */
    databaseUrl: env.DATABASE_URL ?? null,
    dataDir: path.resolve(env.DATA_DIR ?? ".data"),
    dbPoolSize: env.DB_POOL_SIZE,
    /** How long a paid call's charge waits for others to share its statement (0: the event loop's turn). */
    chargeGroupWaitMs: env.CHARGE_GROUP_WAIT_MS,
    /**
     * How long a paid call whose charge statement lost its connection waits to learn whether it
     * committed (ms); past it the call is answered 503 and the charge is settled in the background.
     */
    chargeResolveMs: env.CHARGE_RESOLVE_MS,
    /**
     * How long a database connection may wait for an answer while the database says nothing at
     * all before the database is probed on a fresh connection (2 s more); a failed probe takes
     * the link for down and every query is answered 503 at once until it answers again (ms).
     */
    dbSilenceMs: env.DB_SILENCE_MS,
    /**
     * PostgreSQL ends a session of ours that stays idle inside a transaction this long, releasing
     * its row locks: the transaction of a host cut off mid-way (ms; 0: not sent, the server's
     * own setting applies).
     */
    dbIdleInTransactionMs: env.DB_IDLE_IN_TRANSACTION_MS,
  };
}
