/**
 * Assembles the two listeners from their dependencies without starting them:
 *  - public: SignalsService and the free MarketDataService and UsageService over REST (from
 *    the proto annotations), Connect, gRPC, gRPC-Web; the OpenAPI document and /docs; the
 *    web pages;
 *  - internal (loopback by default, bearer token): AdminService, IngestService,
 *    DataIngestService, the signal event stream and health.
 * Only main.ts (or a test) calls start().
 */

import { flushCompileCache } from "node:module";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { KeyLastUsed } from "../accounts/key-last-used.ts";
import type { Config } from "../config.ts";
import { errorSummary } from "../logger.ts";
import { createHealthProbe, createHealthService } from "../observability/health.ts";
import { createMetrics, type Metrics } from "../observability/metrics.ts";
import type { WebRequest, WebResponse } from "../web/http.ts";
import type { AppDeps, Handler, Shared } from "./app-deps.ts";
import { clientFaultsAsInvalidArgument } from "./client-errors.ts";
import { withJsonRouterErrors, withRequestLimits } from "./http-errors.ts";
import { createKeyedServices } from "./keyed-services.ts";
import { createDualProtocolListener, type DualProtocolListener } from "./listener.ts";
import { serveReflection } from "./reflection.ts";
import { withRequestScope } from "./request-scope.ts";
import { createRestHandler, errorResponse, sendError } from "./rest.ts";

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

const NOT_FOUND_HINT =
  "No such route. The API is GET /api/v1/signals (paid) and GET /api/v1/movers, /derivatives, /news, " +
  "/macro, /fundamentals and /usage (free); the reference is GET /api/v1/openapi.json and /docs.";

/**
 * A request handler built by `load` on its first request (once, shared by concurrent first
 * requests). A load that failed is tried again by the next request rather than kept. Once
 * loaded, Node's compile cache (npm start's) is written again, as main.ts writes it at start:
 * the next process that loads these modules reads them from it instead of loading the
 * TypeScript stripper (~10 MiB RSS; bench/README.md, "Each worker holding 400 × 5").
 */
function onFirstUse<R>(
  load: () => Promise<(req: WebRequest, res: WebResponse) => Promise<R>>,
): (req: WebRequest, res: WebResponse) => Promise<R> {
  let handler: ReturnType<typeof load> | null = null;
  const loading = () =>
    load().then(
      (loaded) => {
        flushCompileCache();
        return loaded;
      },
      (err: unknown) => {
        handler = null;
        throw err;
      },
    );
  return async (req, res) => (await (handler ??= loading()))(req, res);
}

/**
 * The public port: the keyed services over Connect, gRPC and gRPC-Web, and in the fallback
 * REST, then the API's documents, then the web pages.
 */
function createPublicHandler(deps: AppDeps, shared: Shared) {
  const { config, logger } = deps;
  const { metrics, shutdown } = shared;
  const keyed = createKeyedServices({ ...deps, metrics, keyUse: shared.keyUse });
  const rest = createRestHandler(keyed, logger, shutdown);
  // The API's documents and the web pages (hono, the page renderers, their assets) load on the
  // first request that gets past the REST routes: a process that only answers the API never
  // holds them (bench/README.md, "Each worker holding 400 × 5").
  const docs = onFirstUse(async () => {
    const [{ createDocsHandler }, { publicOpenApiDocument, publicProtoFiles }] = await Promise.all([
      import("./docs-page.ts"),
      import("./public-api.ts"),
    ]);
    const protoFiles = publicProtoFiles();
    return createDocsHandler(publicOpenApiDocument(config.publicBaseUrl, [...protoFiles.keys()]), protoFiles);
  });
  const web = onFirstUse(async () =>
    (await import("../web/app.ts")).createWebHandler(
      {
        ...deps,
        onTrackRecordComputed: (_symbol, tf) => metrics.trackRecordComputations.inc({ tf }),
        onPasswordHash: (outcome) => metrics.passwordHashes.inc({ outcome }),
      },
      {
        notFound: () => errorResponse("not_found", NOT_FOUND_HINT),
        badRequest: () => errorResponse("bad_request", "The Host header cannot be read."),
      },
    ),
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

/**
 * A listener around its handler: size limits and the router's refusals answer the JSON error
 * body, inside the request scope (logged). The public port bounds unauthenticated HTTP/2
 * streams; the internal port lets feeders stream for hours.
 */
function createListener(config: Config, logger: Logger, handler: Handler, listener: "public" | "internal") {
  const limits = {
    maxHeaderBytes: config.maxHeaderBytes,
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs,
  };
  const guarded = withRequestLimits(withJsonRouterErrors(clientFaultsAsInvalidArgument(handler)), limits);
  const streams =
    listener === "public"
      ? { streamMaxLifeMs: config.streamMaxLifeMs, streamsPerAddress: config.streamsPerAddress }
      : { longRequestStreams: true };
  return createDualProtocolListener(withRequestScope(guarded, { logger, trustProxy: config.trustProxy, listener }), {
    ...limits,
    ...streams,
    goawayGraceMs: config.goawayGraceMs,
  });
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
  const publicListener = createListener(config, logger, createPublicHandler(deps, shared), "public");
  let internalListener: DualProtocolListener | null = null;
  return {
    metrics,
    async start({ internal = true } = {}) {
      const port = await publicListener.listen(config.port, config.host);
      if (!internal) return { port, internalPort: null };
      // Loaded only where the internal listener runs (a cluster's followers never load the
      // admin, ingest and feeder services).
      const { createInternalHandler } = await import("./internal-handler.ts");
      internalListener = createListener(config, logger, createInternalHandler(deps, shared), "internal");
      // Exclusive: in a cluster only the lead worker serves the internal listener (the engine
      // writer), so its socket is its own rather than shared through the primary (which would
      // also confuse it with the public one when both ports are 0: same cluster handle key).
      const internalPort = await internalListener.listen(config.internalPort, config.internalHost, {
        exclusive: true,
      });
      return { port, internalPort };
    },
    async stop(graceMs = 10_000) {
      // In-flight calls keep running until the grace period ends; then they are aborted.
      const deadline = setTimeout(() => shutdown.abort(), graceMs);
      // Event streams never end by themselves: tell their consumers to reconnect elsewhere.
      deps.events?.close();
      await Promise.all([publicListener.close(graceMs), internalListener?.close(graceMs)]);
      clearTimeout(deadline);
      shutdown.abort();
      // After the last call: what it noted is written too.
      await keyUse.close();
    },
  };
}
