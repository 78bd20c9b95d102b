/**
 * Assembles the two listeners from their dependencies without starting them:
 *  - public: SignalsService over REST (from the proto annotations), Connect, gRPC, gRPC-Web;
 *  - internal (loopback by default, bearer token): AdminService, IngestService, the signal
 *    event stream and health.
 * Only main.ts (or a test) calls start().
 */
import { errorSummary } from "../logger.ts";
import { randomUUID } from "node:crypto";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { ConnectRouter } from "@connectrpc/connect";
import type { Logger } from "pino";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import type { SignalEventHub } from "../events/event-hub.ts";
import { createSignalEventsService } from "../events/events-service.ts";
import type { MarketFeed } from "../market/feed.ts";
import { createIngestService } from "../market/ingest-service.ts";
import type { Config } from "../config.ts";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import type { SignalSnapshot } from "../signals/snapshot.ts";
import { createSignalsService } from "../signals/service.ts";
import { createAdminService } from "../admin/service.ts";
import { createDualProtocolListener, type RequestHandler } from "./listener.ts";
import { createRestHandler, sendError, sendJson } from "./rest.ts";
import { getSignalsResponseJson } from "./rest-json.ts";
import { bearerAuthInterceptor, createBearerCheck } from "./internal-auth.ts";

export interface AppDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly snapshot: SignalSnapshot;
  /** Candle ingest; when absent the internal listener has no IngestService. */
  readonly feed?: MarketFeed;
  /** The internal listener's bearer token (from config or generated at start). */
  readonly internalToken: string;
  /** Wakes the internal signal event streams; when absent the stream is not served. */
  readonly events?: SignalEventHub;
}

export interface App {
  /** Starts both listeners; returns the bound ports (useful with port 0 in tests). */
  start(): Promise<{ port: number; internalPort: number }>;
  /** Drains in-flight calls, then closes both listeners. */
  stop(graceMs?: number): Promise<void>;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Gives every response an x-request-id (the caller's, if well-formed) for log correlation. */
function withRequestId(handler: RequestHandler): RequestHandler {
  return (req, res) => {
    const given = req.headers["x-request-id"];
    const id = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader("x-request-id", id);
    handler(req, res);
  };
}

/** Builds the application over its dependencies. */
export function createApp(deps: AppDeps): App {
  const { config, logger } = deps;
  const shutdown = new AbortController();
  const signals = createSignalsService({ ...deps, limits: config.limits });
  const rest = createRestHandler(
    [{ service: SignalsService, method: SignalsService.method.getSignals, invoke: (r, ctx) => Promise.resolve(signals.getSignals(r as never, ctx)), toJson: getSignalsResponseJson }],
    logger,
    shutdown.signal,
  );
  const publicHandler = connectNodeAdapter({
    routes: (router: ConnectRouter) => router.service(SignalsService, signals),
    grpc: true,
    grpcWeb: true,
    connect: true,
    readMaxBytes: 64 * 1024,
    shutdownSignal: shutdown.signal,
    fallback: (req, res) => {
      rest(req, res)
        .then((handled) => {
          if (!handled) sendError(res, "not_found", "No such route. The paid endpoint is GET /api/v1/signals.");
        })
        .catch((err: unknown) => {
          logger.error({ err: errorSummary(err) }, "fallback handler failed");
          if (!res.headersSent) sendError(res, "internal");
        });
    },
  });

  const bearer = createBearerCheck(deps.internalToken);
  const admin = createAdminService({ ...deps, limits: config.limits });
  const internalHandler = connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      router.service(AdminService, admin);
      if (deps.feed) router.service(IngestService, createIngestService(deps.feed, logger));
      if (deps.events) router.service(SignalEventsService, createSignalEventsService({ db: deps.db, hub: deps.events, logger }));
    },
    interceptors: [bearerAuthInterceptor(bearer)],
    grpc: true,
    grpcWeb: false,
    connect: true,
    readMaxBytes: 4 * 1024 * 1024,
    shutdownSignal: shutdown.signal,
    fallback: (req, res) => {
      const path = new URL(req.url ?? "/", "http://localhost").pathname;
      if (path === "/healthz") return sendJson(res, 200, { ok: true });
      sendError(res, "not_found");
    },
  });

  const listenerOptions = { maxHeaderBytes: config.maxHeaderBytes };
  const publicListener = createDualProtocolListener(withRequestId(publicHandler), listenerOptions);
  const internalListener = createDualProtocolListener(withRequestId(internalHandler), listenerOptions);
  return {
    async start() {
      const port = await publicListener.listen(config.port, config.host);
      const internalPort = await internalListener.listen(config.internalPort, config.internalHost);
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
    },
  };
}
