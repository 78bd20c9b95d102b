/**
 * The whole server over an open database, not yet started: the market feed, the signal event
 * hub, both listeners (create-app.ts), alert delivery and the purge timer. `start()` loads the
 * feed and starts each part; `stop()` stops them in reverse. main.ts (through boot.ts) and the
 * end-to-end tests use this same factory, so the tests run the real server.
 */
import type { Logger } from "pino";
import { purgeFailedKeyWindows } from "../accounts/failed-key-throttle.ts";
import { purgeExpiredKeyReveals } from "../accounts/key-reveal.ts";
import { purgePageViewWindows } from "../accounts/page-views.ts";
import type { AlertDelivery } from "../alerts/delivery.ts";
import { queueSignalAlerts } from "../alerts/signal-alerts.ts";
import { purgeExpiredConnectTokens } from "../alerts/telegram-connect.ts";
import { purgeChargeAttempts } from "../billing/charge.ts";
import { purgeExpiredIdempotentCalls } from "../billing/idempotent-charge.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { SignalEventHub } from "../events/event-hub.ts";
import { errorSummary } from "../logger.ts";
import { MarketFeed } from "../market/feed.ts";
import type { SignalSnapshot } from "../market/snapshot.ts";
import { purgeFreeCallWindows } from "../market-data/free-call.ts";
import { type App, createApp } from "./create-app.ts";

/** How often stored answers, charge attempts and free-call windows past their life are deleted. */
const PURGE_EVERY_MS = 10 * 60 * 1000;

export interface ServerDeps {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The internal listener's bearer token, or where to read it at each check (a rotated file). */
  readonly internalToken: string | (() => string);
  /**
   * Where the paid endpoint's readings come from. Absent: a MarketFeed over the database, which
   * also backs IngestService. A fixed snapshot (tests) leaves the server without IngestService.
   */
  readonly snapshot?: SignalSnapshot;
  /**
   * "follower" (one of several workers, server/cluster.ts): only the public listener, with the
   * market followed through the database's notifications. "lead" (default): every part,
   * including those that must run once per machine: the internal listener (the engine writer),
   * alert delivery and the purge timer.
   */
  readonly role?: "lead" | "follower";
}

export interface Server {
  /** The market feed (null when the server answers from a fixed snapshot). */
  readonly feed: MarketFeed | null;
  /** Wakes the internal signal event streams. */
  readonly events: SignalEventHub;
  /** The app's Prometheus registry and instruments. */
  readonly metrics: App["metrics"];
  /** Message delivery, once started. */
  readonly delivery: AlertDelivery | null;
  /** Loads the feed and starts every part of its role; returns the bound ports (internalPort null for a follower). */
  start(): Promise<{ port: number; internalPort: number | null }>;
  /** Drains in-flight calls (for at most graceMs), then stops every part. */
  stop(graceMs?: number): Promise<void>;
}

/** Builds the server over an open, migrated database without starting anything. */
export function createServer(config: Config, deps: ServerDeps): Server {
  const { db, clock, logger } = deps;
  const lead = deps.role !== "follower";
  // Wakes the live watchlists of this process when its readings change (its own commits, or
  // another process's that it followed): every worker has its own, fed by its own feed.
  const readings = new SignalEventHub();
  const feed = deps.snapshot
    ? null
    : new MarketFeed({
        db,
        clock,
        logger,
        staleAfterMs: config.staleAfterMs,
        alertMaxDelayMs: config.alerts.maxDelayMs,
        // Alerts subscribe to what the market commits (same transaction).
        onEventsStored: queueSignalAlerts,
        onReadingsChanged: () => readings.notify(),
      });
  const events = new SignalEventHub();
  let delivery: AlertDelivery | null = null;
  let purge: NodeJS.Timeout | undefined;
  const app = createApp({
    config,
    db,
    clock,
    logger,
    snapshot: feed ?? deps.snapshot!,
    ...(feed ? { feed } : {}),
    internalToken: deps.internalToken,
    events,
    readings,
    // Read when /metrics is scraped; delivery starts after the listeners.
    deliveries: () => delivery?.worker?.counts ?? null,
  });

  function purgeOld(): void {
    const warn = (what: string) => (err: unknown) =>
      logger.warn({ err: errorSummary(err) }, `purge of old ${what} failed`);
    purgeExpiredIdempotentCalls(db, clock()).catch(warn("idempotent answers"));
    // Charge attempt ids are UUIDv7 from the wall clock (billing/charge.ts), so they are purged by it.
    purgeChargeAttempts(db).catch(warn("charge attempts"));
    purgeFreeCallWindows(db, clock()).catch(warn("free-call windows"));
    purgeExpiredKeyReveals(db, clock()).catch(warn("key reveals"));
    purgeExpiredConnectTokens(db, clock()).catch(warn("telegram connect tokens"));
    purgePageViewWindows(db, clock()).catch(warn("page view windows"));
    purgeFailedKeyWindows(db, clock(), config.failedKeyWindowMs).catch(warn("failed-key windows"));
  }

  return {
    feed,
    events,
    metrics: app.metrics,
    get delivery() {
      return delivery;
    },
    async start() {
      await feed?.load();
      if (!lead) return app.start({ internal: false });
      await events.start(db);
      const ports = await app.start();
      // Only the lead delivers: followers never load the senders and their HTTP client (undici).
      const { startAlertDelivery } = await import("../alerts/delivery.ts");
      delivery = await startAlertDelivery(config, db, logger, clock);
      purge = setInterval(purgeOld, PURGE_EVERY_MS);
      purge.unref();
      return ports;
    },
    async stop(graceMs) {
      clearInterval(purge);
      // Live watchlist streams end at once (their browsers reconnect to another process).
      readings.close();
      await app.stop(graceMs);
      await delivery?.stop();
      await feed?.close();
    },
  };
}
