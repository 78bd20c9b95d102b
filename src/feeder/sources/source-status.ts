/**
 * What each periodic source last achieved, for the feeder's /status page and its metrics:
 * `feed_source_last_success_seconds{source}` and `feed_source_errors_total{source}`.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { Clock } from "../../clock.ts";
import type { SourceReporter } from "./source.ts";

export interface SourceStatus {
  name: string;
  lastSuccessMs: number | null;
  lastError: string | null;
  lastErrorMs: number | null;
}

/** Registers a metric once per registry (the feeder may build several boards over one registry). */
function metricOnce<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/** Keeps the status of each named source and mirrors it into the registry's metrics. */
export class SourceStatusBoard {
  readonly #clock: Clock;
  readonly #statuses = new Map<string, SourceStatus>();
  readonly #lastSuccess: Gauge<"source">;
  readonly #errors: Counter<"source">;

  constructor(registry: Registry, clock: Clock) {
    this.#clock = clock;
    this.#lastSuccess = metricOnce(
      registry,
      "feed_source_last_success_seconds",
      () =>
        new Gauge({
          name: "feed_source_last_success_seconds",
          help: "Unix time of the last successful fetch and push of a context source.",
          labelNames: ["source"],
          registers: [registry],
        }),
    );
    this.#errors = metricOnce(
      registry,
      "feed_source_errors_total",
      () =>
        new Counter({
          name: "feed_source_errors_total",
          help: "Failed fetches or pushes of a context source (one per failing feed, series or call).",
          labelNames: ["source"],
          registers: [registry],
        }),
    );
  }

  /** Adds the source `name` (listed from now on, in the order added) and answers where it reports. */
  reporter(name: string): SourceReporter {
    if (!this.#statuses.has(name)) {
      this.#statuses.set(name, { name, lastSuccessMs: null, lastError: null, lastErrorMs: null });
      this.#errors.inc({ source: name }, 0);
    }
    return { success: () => this.success(name), failure: (message) => this.failure(name, message) };
  }

  /** Records a successful round of `name`. */
  success(name: string): void {
    const now = this.#clock();
    this.#status(name).lastSuccessMs = now;
    this.#lastSuccess.set({ source: name }, now / 1000);
  }

  /** Records one failure of `name` with a message fit for operators (no secrets). */
  failure(name: string, message: string): void {
    const status = this.#status(name);
    status.lastError = message;
    status.lastErrorMs = this.#clock();
    this.#errors.inc({ source: name });
  }

  /** A copy of every status, in the order the sources were added. */
  statuses(): SourceStatus[] {
    return [...this.#statuses.values()].map((s) => ({ ...s }));
  }

  #status(name: string): SourceStatus {
    const status = this.#statuses.get(name);
    if (!status) throw new Error(`unknown context source ${name}`);
    return status;
  }
}
