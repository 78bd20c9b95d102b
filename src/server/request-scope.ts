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
const REQUEST_ID_HEADER = "x-request-id";

type Response = Parameters<RequestHandler>[1];
/** Where a response keeps the id it will send (read by writeHeadWithRequestId). */
const RESPONSE_ID = Symbol("x-request-id");
type IdentifiedResponse = Response & { [RESPONSE_ID]?: string };
type WriteHead = (this: Response, status: number, ...rest: unknown[]) => Response;

/** The id this response will send (or has sent) in x-request-id; undefined outside a request scope. */
export function requestIdOf(res: Response): string | undefined {
  return (res as IdentifiedResponse)[RESPONSE_ID];
}

/**
 * The response's writeHead with x-request-id among the headers. Setting the id with setHeader
 * before the head would cost every answer Node's slow path: once any header has been set,
 * writeHead sends each header of its object through setHeader too (a validation, a lower-cased
 * copy and a pair array each), where a head given as one object is written from it directly. So
 * the id joins the object when there is one; a head without an object (an implicit head, or
 * raw header arrays) gets it through setHeader as before.
 */
function writeHeadWithRequestId(this: IdentifiedResponse, status: number, reason?: unknown, headers?: unknown) {
  const writeHead = (Object.getPrototypeOf(this) as { writeHead: WriteHead }).writeHead;
  const given = typeof reason === "string" ? headers : reason;
  const id = this[RESPONSE_ID]!;
  let sent = given;
  if (given !== null && typeof given === "object" && !Array.isArray(given)) {
    if (!(REQUEST_ID_HEADER in given)) sent = { ...given, [REQUEST_ID_HEADER]: id };
  } else if (!this.hasHeader(REQUEST_ID_HEADER)) this.setHeader(REQUEST_ID_HEADER, id);
  return typeof reason === "string" ? writeHead.call(this, status, reason, sent) : writeHead.call(this, status, sent);
}

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
    (res as IdentifiedResponse)[RESPONSE_ID] = reqId;
    (res as { writeHead: unknown }).writeHead = writeHeadWithRequestId;
    const context: RequestContext = { reqId, peer: peerOf(req, options.trustProxy) };
    const started = process.hrtime.bigint();
    // A response closes once (`once` would wrap the listener in another function per call).
    res.on("close", () => {
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
