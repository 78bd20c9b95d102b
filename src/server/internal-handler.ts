/**
 * The internal port's handler, behind the bearer token: AdminService, IngestService,
 * FeederService, the signal event stream and DataIngestService; /healthz and /metrics. Loaded
 * only by the process that serves the internal listener (create-app.ts).
 */
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { DataIngestService } from "../../gen/signals/v1/data_ingest_pb.js";
import { SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import { FeederService } from "../../gen/signals/v1/feeder_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { createAdminService } from "../admin/service.ts";
import { runChecks } from "../doctor/checks.ts";
import { createSignalEventsService } from "../events/events-service.ts";
import { errorSummary } from "../logger.ts";
import { createFeederService } from "../market/feed-leases.ts";
import { createIngestService } from "../market/ingest-service.ts";
import { createDataIngestService } from "../market-data/ingest-service.ts";
import type { HealthProbe } from "../observability/health.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { AppDeps, Handler, Shared } from "./app-deps.ts";
import { bearerAuthInterceptor, createBearerCheck } from "./internal-auth.ts";
import { serveReflection } from "./reflection.ts";
import { requestUrl, sendError, sendJson } from "./rest.ts";

/** GET /healthz: 200 when the database answers and the process is not stopping, else 503. */
async function sendHealth(res: Parameters<typeof sendJson>[0], probe: HealthProbe): Promise<void> {
  const healthy = await probe.healthy();
  sendJson(res, healthy ? 200 : 503, { ok: healthy, database: healthy ? "up" : "unavailable" });
}

/** GET /metrics in the Prometheus text format. */
async function sendMetrics(res: Parameters<typeof sendJson>[0], metrics: Metrics, logger: Logger): Promise<void> {
  try {
    const body = await metrics.registry.metrics();
    (res as import("node:http").ServerResponse).writeHead(200, {
      "content-type": metrics.registry.contentType,
      "cache-control": "no-store",
    });
    res.end(body);
  } catch (err) {
    logger.error({ err: errorSummary(err) }, "metrics could not be collected");
    sendError(res, "unavailable");
  }
}

/** The internal port's Connect adapter over the app's dependencies and the parts both listeners share. */
export function createInternalHandler(deps: AppDeps, shared: Shared): Handler {
  const { config, logger, feed, events } = deps;
  const admin = createAdminService({
    ...deps,
    limits: config.limits,
    publicBaseUrl: config.publicBaseUrl,
    passwordHashCost: config.passwordHashCost,
    runChecks: () => runChecks({ db: deps.db, clock: deps.clock, config }),
  });
  const services: DescService[] = [
    AdminService,
    ...(feed ? [IngestService] : []),
    FeederService,
    ...(events ? [SignalEventsService] : []),
    DataIngestService,
  ];
  return connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      router.service(AdminService, admin);
      if (feed) router.service(IngestService, createIngestService(feed, logger, deps.db));
      router.service(FeederService, createFeederService(deps.db, feed));
      if (events) router.service(SignalEventsService, createSignalEventsService({ db: deps.db, hub: events, logger }));
      router.service(DataIngestService, createDataIngestService(deps));
      // Behind the bearer token like every internal RPC.
      serveReflection(router, services);
    },
    interceptors: [bearerAuthInterceptor(createBearerCheck(deps.internalToken))],
    grpc: true,
    grpcWeb: false,
    connect: true,
    readMaxBytes: 4 * 1024 * 1024,
    shutdownSignal: shared.shutdown,
    fallback: (req, res) => {
      const path = requestUrl(req.url)?.pathname;
      if (path === "/healthz") return void sendHealth(res, shared.health);
      if (path === "/metrics") return void sendMetrics(res, shared.metrics, logger);
      sendError(res, "not_found");
    },
  });
}
