/**
 * What the listeners' handlers are built from: the app's dependencies and the parts both
 * listeners share (create-app.ts builds the public handler, internal-handler.ts the internal one).
 */
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import type { KeyLastUsed } from "../accounts/key-last-used.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import type { SignalEventHub } from "../events/event-hub.ts";
import type { MarketFeed } from "../market/feed.ts";
import type { SignalSnapshot } from "../market/snapshot.ts";
import type { HealthProbe } from "../observability/health.ts";
import type { Metrics } from "../observability/metrics.ts";

export interface AppDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly snapshot: SignalSnapshot;
  /** Candle ingest; when absent the internal listener has no IngestService. */
  readonly feed?: MarketFeed;
  /** The internal listener's bearer token, or where to read it at each check (a rotated file). */
  readonly internalToken: string | (() => string);
  /** Wakes the internal signal event streams; when absent the stream is not served. */
  readonly events?: SignalEventHub;
  /**
   * Wakes the live watchlists when this process's readings change; when absent they refresh on their heartbeat only.
   */
  readonly readings?: SignalEventHub;
  /** This process's outbox delivery counters, for /metrics. */
  readonly deliveries?: () => { sent: number; retried: number; failed: number } | null;
}

/** The parts both listeners' handlers share. */
export interface Shared {
  readonly metrics: Metrics;
  readonly health: HealthProbe;
  readonly keyUse: KeyLastUsed;
  readonly shutdown: AbortSignal;
}

/** A Connect adapter: what a listener serves. */
export type Handler = ReturnType<typeof connectNodeAdapter>;
