/**
 * Health: the standard gRPC health service (grpc.health.v1.Health) on the public listener, for
 * gRPC-aware load balancers and grpc_health_probe, and a JSON /healthz on both listeners. A
 * process is SERVING when its database answers and it is not shutting down.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import { HealthCheckResponse_ServingStatus as Status, type Health } from "../../gen/grpc/health/v1/health_pb.js";
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

export function createHealthService(probe: HealthProbe): ServiceImpl<typeof Health> {
  const status = async () => ((await probe.healthy()) ? Status.SERVING : Status.NOT_SERVING);
  return {
    async check(request) {
      if (!SERVICES.has(request.service)) throw serviceError("not_found", `unknown service "${request.service.slice(0, 100)}"`);
      return { status: await status() };
    },
    async *watch(request, ctx) {
      if (!SERVICES.has(request.service)) {
        yield { status: Status.SERVICE_UNKNOWN };
        return;
      }
      let last: Status | null = null;
      while (!ctx.signal.aborted) {
        const now = await status();
        if (now !== last) yield { status: now };
        last = now;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, WATCH_EVERY_MS);
          function done() {
            clearTimeout(timer);
            ctx.signal.removeEventListener("abort", done);
            resolve();
          }
          ctx.signal.addEventListener("abort", done, { once: true });
        });
      }
    },
  };
}
