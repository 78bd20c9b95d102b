/**
 * Health: the standard gRPC health service (grpc.health.v1.Health) on the public listener, for
 * gRPC-aware load balancers and grpc_health_probe, and a JSON /healthz on both listeners. A
 * process is SERVING when its database answers and it is not shutting down.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import { type Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";

/** Service names this process reports on ("" is the whole server). */
const SERVICES = new Set(["", "signals.v1.SignalsService"]);
const PING_TIMEOUT_MS = 2_000;
const WATCH_EVERY_MS = 5_000;

export interface HealthProbe {
  /** True when the database answered a trivial query in time and the process is not stopping. */
  healthy(): Promise<boolean>;
}

export function createHealthProbe(db: DbHandle, shuttingDown: AbortSignal): HealthProbe {
  return {
    async healthy() {
      if (shuttingDown.aborted) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
      });
      const ping = db.rows(sql`SELECT 1`).then(
        () => true,
        () => false,
      );
      try {
        return await Promise.race([ping, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * One probe for every Watch stream of a process (each stream ran its own
 * `SELECT 1` every 5 s, so 100 streams tripled the database's commit rate). While at least one
 * watcher listens, the probe runs every WATCH_EVERY_MS and its result goes to all of them; with
 * none, nothing runs.
 */
export class SharedHealthWatch {
  readonly #status: () => Promise<Status>;
  readonly #everyMs: number;
  readonly #watchers = new Set<(status: Status) => void>();
  #last: Status | null = null;
  #timer: NodeJS.Timeout | null = null;
  #probing: Promise<void> | null = null;
  /** Probes run so far (for tests and metrics). */
  probes = 0;

  constructor(status: () => Promise<Status>, everyMs = WATCH_EVERY_MS) {
    this.#status = status;
    this.#everyMs = everyMs;
  }

  /**
   * Calls `onStatus` with the current status at once (probing if none is known) and on every change; returns the
   * unsubscribe.
   */
  subscribe(onStatus: (status: Status) => void): () => void {
    this.#watchers.add(onStatus);
    if (this.#last !== null) onStatus(this.#last);
    if (this.#timer === null) {
      void this.#probe();
      this.#timer = setInterval(() => void this.#probe(), this.#everyMs);
      this.#timer.unref();
    }
    return () => {
      this.#watchers.delete(onStatus);
      if (this.#watchers.size === 0 && this.#timer !== null) {
        clearInterval(this.#timer);
        this.#timer = null;
        // The next watcher probes afresh rather than trusting an old answer.
        this.#last = null;
      }
    };
  }

  #probe(): Promise<void> {
    // One probe at a time, whatever the number of watchers.
    this.#probing ??= (async () => {
      try {
        this.probes++;
        const now = await this.#status();
        if (now === this.#last || this.#timer === null) return;
        this.#last = now;
        for (const watcher of this.#watchers) watcher(now);
      } finally {
        this.#probing = null;
      }
    })();
    return this.#probing;
  }
}

export function createHealthService(probe: HealthProbe, shared?: SharedHealthWatch): ServiceImpl<typeof Health> {
  const status = async () => ((await probe.healthy()) ? Status.SERVING : Status.NOT_SERVING);
  const watchers = shared ?? new SharedHealthWatch(status);
  return {
    async check(request) {
      if (!SERVICES.has(request.service))
        throw serviceError("not_found", `unknown service "${request.service.slice(0, 100)}"`);
      return { status: await status() };
    },
    async *watch(request, ctx) {
      if (!SERVICES.has(request.service)) {
        yield { status: Status.SERVICE_UNKNOWN };
        return;
      }
      // Changes arrive from the shared probe; this stream only waits for them (or its end).
      const pending: Status[] = [];
      let wake: (() => void) | null = null;
      const unsubscribe = watchers.subscribe((s) => {
        pending.push(s);
        wake?.();
      });
      const onAbort = () => wake?.();
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      try {
        while (!ctx.signal.aborted) {
          const next = pending.shift();
          if (next !== undefined) {
            yield { status: next };
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      } finally {
        unsubscribe();
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
  };
}
