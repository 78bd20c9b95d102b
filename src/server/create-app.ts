/**
 * Assembles the two listeners from their dependencies without starting them:
 *  - public: SignalsService and the free MarketDataService and UsageService over REST (from
 *    the proto annotations), Connect, gRPC, gRPC-Web; the OpenAPI document and /docs; the
 *    web pages;
 *  - internal (loopback by default, bearer token): AdminService, IngestService,
 *    DataIngestService, the signal event stream and health.
 * Only main.ts (or a test) calls start().
 */

import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { DataIngestService } from "../../gen/signals/v1/data_ingest_pb.js";
import { SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import { FeederService } from "../../gen/signals/v1/feeder_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { KeyLastUsed } from "../accounts/key-last-used.ts";
import { createAdminService } from "../admin/service.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { runChecks } from "../doctor/checks.ts";
import type { SignalEventHub } from "../events/event-hub.ts";
import { createSignalEventsService } from "../events/events-service.ts";
import { errorSummary } from "../logger.ts";
import type { MarketFeed } from "../market/feed.ts";
import { createFeederService } from "../market/feed-leases.ts";
import { createIngestService } from "../market/ingest-service.ts";
import type { SignalSnapshot } from "../market/snapshot.ts";
import { createDataIngestService } from "../market-data/ingest-service.ts";
import { createHealthProbe, createHealthService, type HealthProbe } from "../observability/health.ts";
import { createMetrics, type Metrics } from "../observability/metrics.ts";
import { createWebHandler } from "../web/app.ts";
import { clientFaultsAsInvalidArgument } from "./client-errors.ts";
import { createDocsHandler } from "./docs-page.ts";
import { withJsonRouterErrors, withRequestLimits } from "./http-errors.ts";
import { bearerAuthInterceptor, createBearerCheck } from "./internal-auth.ts";
import { createKeyedServices } from "./keyed-services.ts";
import { createDualProtocolListener } from "./listener.ts";
import { publicOpenApiDocument, publicProtoFiles } from "./public-api.ts";
import { reflectionServices } from "./reflection.ts";
import { withRequestScope } from "./request-scope.ts";
import { createRestHandler, errorResponse, requestUrl, sendError, sendJson } from "./rest.ts";

/** Serves gRPC server reflection (v1 and v1alpha) for the services a router serves. */
function serveReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const { v1, v1alpha } = reflectionServices(services);
  router.service(...v1);
  router.service(...v1alpha);
}

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

export interface App {
  /** This app's Prometheus registry and instruments. */
  readonly metrics: Metrics;
  /**
   * Starts the listeners; returns the bound ports (useful with port 0 in tests). Without
   * `internal` (a follower worker, server/cluster.ts) only the public one: internalPort is null.
   */
  start(options?: { internal?: boolean }): Promise<{ port: number; internalPort: number | null }>;
  /** Drains in-flight calls, then closes both listeners. */
  stop(graceMs?: number): Promise<void>;
}

/** The parts both listeners' handlers share. */
interface Shared {
  readonly metrics: Metrics;
  readonly health: HealthProbe;
  readonly keyUse: KeyLastUsed;
  readonly shutdown: AbortSignal;
}

const NOT_FOUND_HINT =
  "No such route. The API is GET /api/v1/signals (paid) and GET /api/v1/movers, /derivatives, /news, " +
  "/macro, /fundamentals and /usage (free); the reference is GET /api/v1/openapi.json and /docs.";

/**
 * The public port: the keyed services over Connect, gRPC and gRPC-Web, and in the fallback
 * REST, then the API's documents, then the web pages.
 */
function createPublicHandler(deps: AppDeps, shared: Shared) {
  const { config, logger } = deps;
  const { metrics, shutdown } = shared;
  const keyed = createKeyedServices({ ...deps, metrics, keyUse: shared.keyUse });
  const rest = createRestHandler(keyed, logger, shutdown);
  const protoFiles = publicProtoFiles();
  const docs = createDocsHandler(publicOpenApiDocument(config.publicBaseUrl, [...protoFiles.keys()]), protoFiles);
  const web = createWebHandler(
    {
      ...deps,
      onTrackRecordComputed: (_symbol, tf) => metrics.trackRecordComputations.inc({ tf }),
      onPasswordHash: (outcome) => metrics.passwordHashes.inc({ outcome }),
    },
    {
      notFound: () => errorResponse("not_found", NOT_FOUND_HINT),
      badRequest: () => errorResponse("bad_request", "The Host header cannot be read."),
    },
  );
  return connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      for (const { service, impl } of keyed) router.service(service, impl);
      router.service(Health, createHealthService(shared.health));
      // gRPC clients (buf curl, grpcurl) find these services' schema by themselves.
      serveReflection(router, [...keyed.map(({ service }) => service), Health]);
    },
    grpc: true,
    grpcWeb: true,
    connect: true,
    readMaxBytes: 64 * 1024,
    shutdownSignal: shutdown,
    fallback: (req, res) => {
      rest(req, res)
        .then((handled) => handled || docs(req, res))
        .then((handled) => (handled ? undefined : web(req, res)))
        .catch((err: unknown) => {
          logger.error({ err: errorSummary(err) }, "fallback handler failed");
          if (!res.headersSent) sendError(res, "internal");
        });
    },
  });
}

/** The internal port, behind the bearer token: admin, ingest, feeders, the event stream; /healthz and /metrics. */
function createInternalHandler(deps: AppDeps, shared: Shared) {
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

type Handler = ReturnType<typeof connectNodeAdapter>;

/**
 * Both listeners around their handlers: size limits and the router's refusals answer the JSON
 * error body, inside the request scope (logged); unauthenticated HTTP/2 streams on the public
 * port are bounded, the internal port lets feeders stream for hours.
 */
function createListeners(config: Config, logger: Logger, publicHandler: Handler, internalHandler: Handler) {
  const listenerOptions = {
    maxHeaderBytes: config.maxHeaderBytes,
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs,
  };
  const scope = { logger, trustProxy: config.trustProxy };
  const guarded = (handler: Handler) =>
    withRequestLimits(withJsonRouterErrors(clientFaultsAsInvalidArgument(handler)), listenerOptions);
  return {
    publicListener: createDualProtocolListener(
      withRequestScope(guarded(publicHandler), { ...scope, listener: "public" }),
      {
        ...listenerOptions,
        streamMaxLifeMs: config.streamMaxLifeMs,
        streamsPerAddress: config.streamsPerAddress,
        goawayGraceMs: config.goawayGraceMs,
      },
    ),
    internalListener: createDualProtocolListener(
      withRequestScope(guarded(internalHandler), { ...scope, listener: "internal" }),
      {
        ...listenerOptions,
        longRequestStreams: true,
        goawayGraceMs: config.goawayGraceMs,
      },
    ),
  };
}

/** Builds the application over its dependencies. */
export function createApp(deps: AppDeps): App {
  const { config, logger } = deps;
  const shutdown = new AbortController();
  const metrics = createMetrics({
    db: deps.db,
    clock: deps.clock,
    poolSize: config.dbPoolSize,
    ...(deps.feed ? { freshness: () => deps.feed!.freshness() } : {}),
    ...(deps.deliveries ? { deliveries: deps.deliveries } : {}),
  });
  const keyUse = new KeyLastUsed(deps.db, {
    windowMs: config.keyLastUsedFlushMs,
    logger,
    flushes: metrics.keyLastUsedFlushes,
    rowsWritten: metrics.keyLastUsedRows,
  });
  const shared: Shared = {
    metrics,
    keyUse,
    health: createHealthProbe(deps.db, shutdown.signal),
    shutdown: shutdown.signal,
  };
  const { publicListener, internalListener } = createListeners(
    config,
    logger,
    createPublicHandler(deps, shared),
    createInternalHandler(deps, shared),
  );
  return {
    metrics,
    async start({ internal = true } = {}) {
      const port = await publicListener.listen(config.port, config.host);
      // Exclusive: in a cluster only the lead worker serves the internal listener (the engine
      // writer), so its socket is its own rather than shared through the primary (which would
      // also confuse it with the public one when both ports are 0: same cluster handle key).
      const internalPort = internal
        ? await internalListener.listen(config.internalPort, config.internalHost, { exclusive: true })
        : null;
      return { port, internalPort };
    },
    async stop(graceMs = 10_000) {
      // In-flight calls keep running until the grace period ends; then they are aborted.
      const deadline = setTimeout(() => shutdown.abort(), graceMs);
      // Event streams never end by themselves: tell their consumers to reconnect elsewhere.
      deps.events?.close();
      await Promise.all([publicListener.close(graceMs), internalListener.close(graceMs)]);
      clearTimeout(deadline);
      shutdown.abort();
      // After the last call: what it noted is written too.
      await keyUse.close();
    },
  };
}
