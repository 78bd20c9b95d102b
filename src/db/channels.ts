/**
 * The Postgres LISTEN/NOTIFY channels, named once: the writers (TypeScript and the SQL
 * functions in functions/) notify on commit, other server processes listen.
 * test/integration/db-functions.test.ts checks that the SQL functions notify only these.
 */

/** Which coins a commit changed (payload: the coins); other processes reload them. */
export const MARKET_UPDATED = "market_updated";
/** New signal events are committed (the internal event streams wake up). */
export const SIGNAL_EVENTS = "signal_events";
/** New outbox rows are committed (the delivery worker wakes up). */
export const OUTBOX_READY = "outbox_ready";
