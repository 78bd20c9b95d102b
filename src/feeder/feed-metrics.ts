/**
 * The feeder's Prometheus metrics (its own registry) and the loopback HTTP listener serving
 * /metrics, /healthz and /status. /healthz fails (503) whenever the feeder cannot push (the
 * service refused its token, cannot be reached, or a lease was lost) or any coin it leads is
 * stale, and names each cause; /status is every coin's health and every source's last success
 * and last error.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge, Registry } from "prom-client";
import type { SourceStatus } from "./sources/source-status.ts";

/** Per-coin feed state as the metrics and /healthz see it. */
export interface CoinHealth {
  symbol: string;
  state: "standby" | "backfilling" | "live" | "stale" | "unlisted";
  /** Open time of the last closed candle pushed, or null. */
  lastClosedOpenTime: number | null;
  /** Epoch ms of the last stream message, or null. */
  lastMessageAt: number | null;
}

/** Something that keeps the feeder from pushing, as /healthz names it. */
export interface FeederProblem {
  /** refused: the service refused the internal token; unreachable: it cannot be reached; lease_lost: coins given up. */
  readonly cause: "refused" | "unreachable" | "lease_lost";
  /** Epoch ms since when. */
  readonly since: number;
  readonly message: string;
}

export class FeedMetrics {
  readonly registry = new Registry();
  readonly reconnects = new Counter({
    name: "feed_reconnects_total",
    help: "Stream reconnects (after a drop, a silence or an error) per coin.",
    labelNames: ["symbol"],
    registers: [this.registry],
  });
  readonly backfilled = new Counter({
    name: "feed_backfilled_candles_total",
    help: "Closed candles fetched over REST and pushed, per coin.",
    labelNames: ["symbol"],
    registers: [this.registry],
  });
  readonly revisions = new Counter({
    name: "feed_candle_revisions_total",
    help: "Closed candles the exchange changed after they were pushed (found by the audit; never applied).",
    labelNames: ["symbol"],
    registers: [this.registry],
  });
  readonly exchangeErrors = new Counter({
    name: "feed_exchange_errors_total",
    help: "Exchange errors per coin and kind (rate_limit, ban, unavailable, timeout, network, other).",
    labelNames: ["symbol", "kind"],
    registers: [this.registry],
  });
  readonly pushed = new Counter({
    name: "feed_pushed_updates_total",
    help: "Candle updates accepted by the service, per coin and state (forming, closed).",
    labelNames: ["symbol", "state"],
    registers: [this.registry],
  });
  readonly duplicates = new Counter({
    name: "feed_push_duplicates_total",
    help: "Closed candles the service already had (should stay 0).",
    labelNames: ["symbol"],
    registers: [this.registry],
  });
  readonly rejected = new Counter({
    name: "feed_push_rejected_total",
    help: "Candle updates the service refused, per coin and reason.",
    labelNames: ["symbol", "reason"],
    registers: [this.registry],
  });
  readonly sourceErrors = new Counter({
    name: "feed_source_errors_total",
    help:
      "Failed runs of periodic sources (derivatives; news, fundamentals, " +
      "macro count each failing feed, series or call).",
    labelNames: ["source"],
    registers: [this.registry],
  });

  constructor(coins: () => CoinHealth[], tfMs: number, now: () => number) {
    const perCoin = (name: string, help: string, value: (c: CoinHealth) => number | null) => {
      const gauge: Gauge = new Gauge({
        name,
        help,
        labelNames: ["symbol"],
        registers: [this.registry],
        collect() {
          gauge.reset();
          for (const c of coins()) {
            const v = value(c);
            if (v !== null) gauge.set({ symbol: c.symbol }, v);
          }
        },
      });
    };
    perCoin(
      "feed_lag_seconds",
      "Now minus the end of the last closed candle pushed, per coin this feeder leads.",
      (c) =>
        c.state !== "standby" && c.lastClosedOpenTime !== null ? (now() - (c.lastClosedOpenTime + tfMs)) / 1000 : null,
    );
    perCoin(
      "feed_last_message_timestamp_seconds",
      "When the coin's stream last delivered a message (Unix seconds).",
      (c) => (c.lastMessageAt === null ? null : c.lastMessageAt / 1000),
    );
    perCoin("feed_leader", "1 when this feeder leads the coin, 0 on standby.", (c) =>
      c.state === "unlisted" ? null : c.state === "standby" ? 0 : 1,
    );
  }
}

/** Starts /metrics, /healthz and /status on 127.0.0.1:`port`; resolves with the bound port. */
export async function startMetricsListener(
  port: number,
  metrics: FeedMetrics,
  coins: () => CoinHealth[],
  sources: () => SourceStatus[] = () => [],
  problems: () => FeederProblem[] = () => [],
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET" }).end();
      return;
    }
    if (path === "/metrics") {
      metrics.registry
        .metrics()
        .then((text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text))
        .catch(() => res.writeHead(500).end());
      return;
    }
    if (path === "/healthz") {
      const all = coins();
      const stale = all.filter((c) => c.state === "stale").map((c) => c.symbol);
      const found = problems();
      const causes = [...found.map((p) => p.cause), ...(stale.length > 0 ? ["stale" as const] : [])];
      const message = [
        ...found.map((p) => p.message),
        ...(stale.length > 0 ? [`no update from the exchange for a while: ${stale.join(", ")}`] : []),
      ].join("; ");
      const ok = causes.length === 0;
      res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok, causes, ...(ok ? {} : { message }), problems: found, stale, coins: all }));
      return;
    }
    if (path === "/status") {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ coins: coins(), sources: sources() }));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ ok: false, error: "not_found" }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
