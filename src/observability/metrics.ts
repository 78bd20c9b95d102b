/**
 * Prometheus metrics, served at /metrics on the internal listener. One registry per app (tests
 * run several apps in one process). Counters are updated where things happen; gauges about the
 * database (outbox backlog) and the feed (freshness per coin) are read when scraped.
 */
import { sql } from "drizzle-orm";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";

export interface MetricSources {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly poolSize: number;
  /** Per-coin freshness, when this process runs a feed. */
  readonly freshness?: () => { symbol: string; lastUpdateAt: number }[];
  /** Delivery counters, when this process runs the outbox worker. */
  readonly deliveries?: () => { sent: number; retried: number; failed: number } | null;
}

export interface Metrics {
  readonly registry: Registry;
  /** Paid calls by protocol (rest, connect, grpc, grpc-web) and outcome (ok or error code). */
  readonly calls: Counter<"protocol" | "outcome">;
  /** Time of the check-and-charge round trip. */
  readonly chargeSeconds: Histogram<"path">;
  /** Charge statements waiting on the database pool or running. */
  readonly chargesInFlight: Gauge;
  /** Free calls (movers, derivatives, news, macro, fundamentals) by method, protocol and outcome. */
  readonly freeCalls: Counter<"method" | "protocol" | "outcome">;
  /** Batched writes of API keys' last-used times, and the key rows they updated (accounts/key-last-used.ts). */
  readonly keyLastUsedFlushes: Counter;
  readonly keyLastUsedRows: Counter;
  /** Computations of a series' chart data and track record (once per candle close or signal event, not per view). */
  readonly trackRecordComputations: Counter<"tf">;
  /**
   * The web pages' password hashing queue: hashes run, and requests refused or dropped (accounts/sign-in/hash-gate.ts).
   */
  readonly passwordHashes: Counter<"outcome">;
}

export function createMetrics(sources: MetricSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const calls = new Counter({
    name: "signals_calls_total",
    help: "Paid calls by protocol and outcome code.",
    labelNames: ["protocol", "outcome"] as const,
    registers: [registry],
  });
  const chargeSeconds = new Histogram({
    name: "signals_charge_duration_seconds",
    help:
      "Check-and-charge time per call (grouped: one statement for the calls made " +
      "within CHARGE_GROUP_WAIT_MS of each other, wait included; idempotent: one transaction).",
    labelNames: ["path"] as const,
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const chargesInFlight = new Gauge({
    name: "signals_charges_in_flight",
    help: "Charges waiting for or using a database connection.",
    registers: [registry],
  });
  const freeCalls = new Counter({
    name: "signals_free_calls_total",
    help: "Free calls (movers, derivatives, news, macro, fundamentals, usage) by method, protocol and outcome code.",
    labelNames: ["method", "protocol", "outcome"] as const,
    registers: [registry],
  });
  const keyLastUsedFlushes = new Counter({
    name: "signals_api_key_last_used_flushes_total",
    help: "UPDATE statements that wrote API keys' last-used times (one per window, not one per call).",
    registers: [registry],
  });
  const keyLastUsedRows = new Counter({
    name: "signals_api_key_last_used_rows_total",
    help: "API key rows whose last-used time those statements wrote.",
    registers: [registry],
  });
  const trackRecordComputations = new Counter({
    name: "signals_track_record_computations_total",
    help:
      "Chart data and track record computations of one coin and timeframe (after a " +
      "candle close or signal event; page views in between are served from memory).",
    labelNames: ["tf"] as const,
    registers: [registry],
  });
  const passwordHashes = new Counter({
    name: "signals_password_hashes_total",
    help:
      "Password checks of the web pages by outcome: hashed (ran), address_busy (429: that address " +
      "had one in flight), full (503: queue full), client_gone (left the queue without hashing).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "signals_db_pool_size",
    help: "Database connections this process may open.",
    registers: [registry],
  }).set(sources.poolSize);

  const outboxPending = new Gauge({
    name: "signals_outbox_pending",
    help: "Messages waiting for delivery.",
    registers: [registry],
  });
  const outboxOldest = new Gauge({
    name: "signals_outbox_oldest_pending_seconds",
    help: "Age of the oldest undelivered message.",
    registers: [registry],
  });
  const outboxFailed = new Gauge({
    name: "signals_outbox_failed",
    help: "Messages recorded as failed (not delivered).",
    registers: [registry],
  });
  new Gauge({
    name: "signals_outbox_backlog_scrape",
    help: "1 when the outbox backlog could be read at this scrape, 0 when the database did not answer.",
    registers: [registry],
    async collect() {
      try {
        const [row] = await sources.db.rows<{
          pending: string | number;
          oldest: string | number | null;
          failed: string | number;
        }>(sql`
          SELECT count(*) FILTER (WHERE sent_at IS NULL AND failed_at IS NULL) AS pending,
                 extract(epoch FROM now() - min(created_at) FILTER (WHERE sent_at IS NULL AND failed_at IS NULL))
                 AS oldest,
                 count(*) FILTER (WHERE failed_at IS NOT NULL) AS failed
            FROM outbox`);
        outboxPending.set(Number(row?.pending ?? 0));
        outboxOldest.set(Number(row?.oldest ?? 0));
        outboxFailed.set(Number(row?.failed ?? 0));
        this.set(1);
      } catch {
        this.set(0);
      }
    },
  });

  if (sources.freshness) {
    const freshness = sources.freshness;
    new Gauge({
      name: "signals_feed_age_seconds",
      help: "Seconds since each coin's feed last delivered an update.",
      labelNames: ["symbol"] as const,
      registers: [registry],
      collect() {
        this.reset();
        const now = sources.clock();
        for (const coin of freshness())
          this.set({ symbol: coin.symbol }, Math.max(0, (now - coin.lastUpdateAt) / 1000));
      },
    });
  }

  if (sources.deliveries) {
    const deliveries = sources.deliveries;
    new Gauge({
      name: "signals_alert_deliveries",
      help: "Outbox messages handled by this process's worker since start, by result.",
      labelNames: ["result"] as const,
      registers: [registry],
      collect() {
        const counts = deliveries();
        if (!counts) return;
        for (const [result, n] of Object.entries(counts)) this.set({ result }, n);
      },
    });
  }

  return {
    registry,
    calls,
    chargeSeconds,
    chargesInFlight,
    freeCalls,
    keyLastUsedFlushes,
    keyLastUsedRows,
    trackRecordComputations,
    passwordHashes,
  };
}
