/**
 * Wraps a listener's handler so that each request has an id (the caller's x-request-id if
 * well-formed, else a new one, echoed in the response), runs inside its request context (every
 * log line carries reqId), and leaves one access log line with its outcome and duration.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { callerAddress } from "../accounts/address-group.ts";
import { API_KEY_PREFIX } from "../accounts/api-key.ts";
import { redactSecrets } from "../logger.ts";
import { type RequestContext, runInRequest } from "../request-context.ts";
import type { RequestHandler } from "./request-handler.ts";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

export interface RequestScopeOptions {
  readonly logger: Logger;
  /** Which listener, for the access log. */
  readonly listener: "public" | "internal";
  /** Take the caller's address from the last X-Forwarded-For hop (behind our own proxy). */
  readonly trustProxy: boolean;
}

function peerOf(req: Parameters<RequestHandler>[0], trustProxy: boolean): string {
  return callerAddress(req.headers["x-forwarded-for"], req.socket?.remoteAddress, trustProxy);
}

export function withRequestScope(handler: RequestHandler, options: RequestScopeOptions): RequestHandler {
  const { logger, listener } = options;
  return (req, res) => {
    const given = req.headers["x-request-id"];
    // An API key sent as a request id (a client's mix-up) is neither echoed nor logged.
    const reqId =
      typeof given === "string" && REQUEST_ID.test(given) && !given.toLowerCase().includes(API_KEY_PREFIX)
        ? given
        : randomUUID();
    res.setHeader("x-request-id", reqId);
    const context: RequestContext = { reqId, peer: peerOf(req, options.trustProxy) };
    const started = process.hrtime.bigint();
    res.once("close", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // The path only: query strings are the caller's business (and never carry keys, but a
      // misbehaving client might put anything there).
      // A key pasted into the path (a client's mistake) is masked like any secret.
      const path = redactSecrets((req.url ?? "/").split("?")[0]!.slice(0, 200));
      // The id is given here rather than by entering the request's context again for one line
      // (each entry copies the async context).
      logger.info(
        {
          reqId,
          listener,
          method: req.method,
          path,
          status: res.statusCode,
          outcome: context.outcome,
          ms: Math.round(ms * 100) / 100,
          aborted: !res.writableFinished || undefined,
        },
        "request",
      );
    });
    runInRequest(context, () => handler(req, res));
  };
}
