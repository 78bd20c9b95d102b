/**
 * A real server on port 0 over a fresh database, with a controllable clock, for end-to-end
 * tests with real clients. It is the production server (createServer), as main.ts starts it.
 */
import { pino } from "pino";
import { createAccount } from "../../src/accounts/accounts.ts";
import type { AlertDelivery } from "../../src/alerts/delivery.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import type { SignalEventHub } from "../../src/events/event-hub.ts";
import { createLogger } from "../../src/logger.ts";
import type { MarketFeed } from "../../src/market/feed.ts";
import { emptySnapshot, type SignalSnapshot } from "../../src/market/snapshot.ts";
import { createServer } from "../../src/server/create-server.ts";
import { TEST_PASSWORD_COST_ENV } from "./password-cost.ts";
import { createTestDb, type TestDb } from "./test-db.ts";

export const INTERNAL_TOKEN = "test-internal-token-0123456789";

/** A clock tests can set and advance. */
export function createTestClock(start = Date.parse("2026-11-15T04:00:00Z")) {
  let now = start;
  const clock = () => now;
  clock.set = (ms: number) => {
    now = ms;
  };
  clock.advance = (ms: number) => {
    now += ms;
  };
  return clock;
}
export type TestClock = ReturnType<typeof createTestClock>;

export interface TestServer {
  readonly baseUrl: string;
  readonly internalUrl: string;
  readonly port: number;
  readonly internalPort: number;
  readonly db: TestDb;
  readonly config: Config;
  readonly clock: TestClock;
  /** The market feed serving both the snapshot and IngestService (only with `feed: true`). */
  readonly feed: MarketFeed | null;
  /** Message delivery (a worker only when the env sets TELEGRAM_BOT_TOKEN). */
  readonly delivery: AlertDelivery;
  /** Wakes this server's internal signal event streams (`waiting` counts the tailing ones). */
  readonly events: SignalEventHub;
  /** Creates an account and returns its id and key. */
  account(input?: {
    plan?: string;
    email?: string;
    subscriptionUntil?: Date;
  }): Promise<{ accountId: number; apiKey: string }>;
  /** Stops the server (in-flight calls get `graceMs`, 1 s unless given) and drops its own database. */
  close(graceMs?: number): Promise<void>;
}

let emailCounter = 0;

/**
 * Starts a server (public + internal listener) on loopback ports chosen by the OS. With
 * `feed: true`, a MarketFeed over the same database (loaded, on the server's clock and
 * STALE_AFTER) is both the snapshot and the IngestService backend; `snapshot` is then ignored.
 * With `db`, the server runs over that (already migrated) database and close() leaves it open:
 * a second server over the same `db` after close() is a restart. New member passwords are hashed
 * at the tests' low cost (password-cost.ts) unless `env` sets PASSWORD_SCRYPT_LOG_N.
 */
export async function startTestServer(
  options: {
    env?: Record<string, string>;
    snapshot?: SignalSnapshot;
    clock?: TestClock;
    feed?: boolean;
    db?: TestDb;
    /** Where the server's JSON log lines go (the production logger at LOG_LEVEL); default: nowhere. */
    logs?: NodeJS.WritableStream;
  } = {},
): Promise<TestServer> {
  const db = options.db ?? (await createTestDb());
  const config = loadConfig({
    PORT: "0",
    INTERNAL_PORT: "0",
    INTERNAL_TOKEN,
    LOG_LEVEL: "silent",
    ...TEST_PASSWORD_COST_ENV,
    ...options.env,
  });
  const clock = options.clock ?? createTestClock();
  const logger = options.logs ? createLogger(config.logLevel, options.logs) : pino({ level: "silent" });
  const server = createServer(config, {
    db: db.handle,
    clock,
    logger,
    internalToken: INTERNAL_TOKEN,
    ...(options.feed ? {} : { snapshot: options.snapshot ?? emptySnapshot }),
  });
  const { port, internalPort } = await server.start();
  // (null only for a follower worker, which a test server never is)
  if (internalPort === null) throw new Error("the test server did not open its internal listener");
  const feed = server.feed;
  const delivery = server.delivery!;
  const events = server.events;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    internalUrl: `http://127.0.0.1:${internalPort}`,
    port,
    internalPort,
    db,
    config,
    clock,
    feed,
    delivery,
    events,
    async account(input = {}) {
      const { summary, apiKey } = await createAccount(
        db.handle,
        {
          email: input.email ?? `user${++emailCounter}-${process.pid}@example.test`,
          plan: input.plan ?? "node",
          subscriptionUntil: input.subscriptionUntil ?? new Date(clock() + 30 * 24 * 3600 * 1000),
        },
        config.limits,
        clock(),
      );
      return { accountId: summary.accountId, apiKey };
    },
    async close(graceMs = 1000) {
      await server.stop(graceMs);
      if (!options.db) await db.drop();
    },
  };
}
