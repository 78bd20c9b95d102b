/**
 * REST routes derived from the `google.api.http` annotations of the services we serve. The
 * handler builds the request message from the query string, calls the very same service
 * implementation that Connect and gRPC use, and maps the result or the error to JSON.
 */

import type { ServerResponse } from "node:http";
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  getOption,
  type Message,
} from "@bufbuild/protobuf";
import { ConnectError, type ContextValues, createContextValues, type HandlerContext } from "@connectrpc/connect";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { type ErrorCode, errorBodyOf, errorCodeOf, errorSpec } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { addWarnings, unknownParameterWarnings } from "../signals/warnings.ts";
import { requestIdOf } from "./request-scope.ts";
import { restJsonWriter } from "./rest-json.ts";

type FallbackArgs = Parameters<NonNullable<ConnectNodeAdapterOptions["fallback"]>>;
type NodeRequest = FallbackArgs[0];
type NodeResponse = FallbackArgs[1];

/** A service served over REST: its descriptor and the implementation Connect and gRPC also use. */
export interface RestService {
  readonly service: DescService;
  readonly impl: object;
}

interface RestRoute {
  readonly service: DescService;
  readonly method: DescMethod;
  readonly invoke: (request: unknown, ctx: HandlerContext) => Promise<unknown>;
  /** The answer's JSON text. */
  readonly toJson: (response: Message) => string;
  readonly verb: "GET" | "POST";
  readonly path: string;
  /** The query parameters the route reads (the request message's field names). */
  readonly parameters: ReadonlySet<string>;
}

/** Abort reason for a caller gone before its answer: a constant, so no DOMException (and stack) per call. */
const REQUEST_DONE = Object.freeze({ done: true });

/**
 * The handler context of one REST call: what Connect's createHandlerContext builds, without its
 * per-call extras that REST never uses (a deadline controller, listeners linking its controller
 * to the shutdown signal, a copy of the request's Headers, two object copies); the trailer,
 * which REST does not send, is made only if a handler touches it. Its signal aborts when the
 * caller goes away before the call is done and, through the calls in flight, on shutdown.
 */
class RestContext implements HandlerContext {
  readonly protocolName = "rest";
  readonly responseHeader = new Headers();
  readonly values: ContextValues = createContextValues();
  readonly signal: AbortSignal;
  readonly service: DescService;
  readonly method: DescMethod;
  readonly requestMethod: string;
  readonly requestHeader: Headers;
  readonly #target: RequestTarget;
  readonly #controller = new AbortController();
  #trailer: Headers | undefined;

  constructor(route: RestRoute, target: RequestTarget, requestHeader: Headers) {
    this.service = route.service;
    this.method = route.method;
    this.requestMethod = route.verb;
    this.#target = target;
    this.requestHeader = requestHeader;
    this.signal = this.#controller.signal;
  }

  /** The request's URL, made only if a handler asks for it (none of ours does). */
  get url(): string {
    return this.#target.href();
  }

  timeoutMs(): number | undefined {
    return undefined;
  }

  get responseTrailer(): Headers {
    this.#trailer ??= new Headers();
    return this.#trailer;
  }

  abort(reason: unknown): void {
    this.#controller.abort(reason);
  }
}

/** Reads the GET/POST path of a method from its google.api.http option, if any. */
export function httpRouteOf(method: DescMethod): { verb: "GET" | "POST"; path: string } | null {
  const rule = getOption(method, httpRule);
  if (rule.pattern.case === "get") return { verb: "GET", path: rule.pattern.value };
  if (rule.pattern.case === "post") return { verb: "POST", path: rule.pattern.value };
  return null;
}

/**
 * Query → request message: every scalar string field takes the parameter of the same name;
 * a repeated parameter is joined with commas (so `symbols=BTC&symbols=ETH` means
 * `symbols=BTC,ETH`). Unknown parameters are ignored.
 */
export function requestFromQuery(schema: DescMessage, query: URLSearchParams): unknown {
  const init: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const values = query.getAll(field.name);
    if (values.length === 0 || field.fieldKind !== "scalar") continue;
    init[field.localName] = values.join(",");
  }
  return create(schema, init as never);
}

/**
 * Node's header object as name/value pairs for a fetch Headers (HTTP/2 pseudo-headers left
 * out). The handler context builds the one Headers from them (building our own first and
 * letting the context copy it cost a second Headers per call).
 */
export function headerPairs(req: NodeRequest): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name in req.headers) {
    const value = req.headers[name];
    if (name.startsWith(":") || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) pairs.push([name, v]);
    else pairs.push([name, value]);
  }
  return pairs;
}

/** An HTTP header name (a token); anything else makes a fetch Headers throw. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a fetch Headers refuses in a value: NUL, CR, LF, and characters beyond Latin-1. */
const UNREADABLE_VALUE = /[\0\n\r\u0100-\uffff]/;
/** HTTP whitespace at either end of a value, which a fetch Headers strips. */
const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/** True for a value a fetch Headers refuses (it strips the edge whitespace before it looks for CR and LF). */
function unreadable(value: string): boolean {
  return UNREADABLE_VALUE.test(value) && UNREADABLE_VALUE.test(value.replace(EDGE_WHITESPACE, ""));
}

function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** A value without its edge whitespace, as a fetch Headers keeps it (no copy when there is none). */
function stripped(value: string): string {
  const last = value.length - 1;
  return last >= 0 && (isHttpWhitespace(value.charCodeAt(0)) || isHttpWhitespace(value.charCodeAt(last)))
    ? value.replace(EDGE_WHITESPACE, "")
    : value;
}

/**
 * The request's headers for the handler context: a fetch Headers made only when a handler needs
 * more than `get` or `has`. Those two (all our handlers call, for x-api-key and Idempotency-Key)
 * read Node's header object as that Headers would (the same names; values joined with ", " and
 * stripped of edge whitespace; a name that is no token throws as there). Filling a Headers from
 * every header of every call (a validation, a lower-cased copy and a list entry each) was ~2 % of
 * a billed call's CPU, and garbage (bench/README.md, "CPU per billed call, seventh step"). A
 * header a Headers would refuse is refused when this is made, so the caller still gets the 400.
 */
export class NodeRequestHeaders implements Headers {
  readonly #req: NodeRequest;
  #headers: Headers | undefined;

  constructor(req: NodeRequest) {
    this.#req = req;
    for (const name in req.headers) {
      if (name.startsWith(":")) continue;
      const value = req.headers[name];
      if (!HEADER_NAME.test(name)) throw new TypeError(`Invalid header name: ${name}`);
      if (typeof value === "string" ? unreadable(value) : value?.some(unreadable))
        throw new TypeError(`Invalid value of header ${name}`);
    }
  }

  /** The fetch Headers of the request, made on first use by anything but get and has. */
  #full(): Headers {
    this.#headers ??= new Headers(headerPairs(this.#req));
    return this.#headers;
  }

  get(name: string): string | null {
    if (this.#headers !== undefined || !HEADER_NAME.test(name)) return this.#full().get(name);
    const value = this.#req.headers[name.toLowerCase()];
    if (value === undefined) return null;
    // Each value is stripped as it is appended, then the values are joined.
    return typeof value === "string" ? stripped(value) : value.map(stripped).join(", ");
  }

  has(name: string): boolean {
    if (this.#headers !== undefined || !HEADER_NAME.test(name)) return this.#full().has(name);
    return this.#req.headers[name.toLowerCase()] !== undefined;
  }

  set(name: string, value: string): void {
    this.#full().set(name, value);
  }

  append(name: string, value: string): void {
    this.#full().append(name, value);
  }

  delete(name: string): void {
    this.#full().delete(name);
  }

  getSetCookie(): string[] {
    return this.#full().getSetCookie();
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.#full().forEach((value, key) => {
      callback.call(thisArg, value, key, this);
    });
  }

  entries(): ReturnType<Headers["entries"]> {
    return this.#full().entries();
  }

  keys(): ReturnType<Headers["keys"]> {
    return this.#full().keys();
  }

  values(): ReturnType<Headers["values"]> {
    return this.#full().values();
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.#full()[Symbol.iterator]();
  }
}

/** Writes the contract's error body with the catalogue's status. */
export function sendError(
  res: NodeResponse,
  code: ErrorCode,
  message?: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, errorSpec(code).http, errorBodyOf(code, message), headers);
}

/** The contract's error body as a fetch Response (for the hono-served fallback paths). */
export function errorResponse(code: ErrorCode, message?: string): Response {
  return new Response(JSON.stringify(errorBodyOf(code, message)), {
    status: errorSpec(code).http,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  });
}

/** Writes a JSON body with no-store caching (answers are per caller and per moment). */
export function sendJson(res: NodeResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonText(res, status, JSON.stringify(body), { ...headers });
}

/**
 * Writes JSON text already made, with no-store caching. `head` is the caller's own object and is
 * completed in place: the handler's headers first, then these three, then x-request-id, which
 * the request scope's writeHead would otherwise add by copying the whole object (request-scope.ts).
 */
function sendJsonText(res: NodeResponse, status: number, payload: string, head: Record<string, string>): void {
  head["content-type"] = "application/json; charset=utf-8";
  head["content-length"] = String(Buffer.byteLength(payload));
  head["cache-control"] = "no-store";
  const id = requestIdOf(res as Parameters<typeof requestIdOf>[0]);
  if (id !== undefined && head["x-request-id"] === undefined) head["x-request-id"] = id;
  (res as ServerResponse).writeHead(status, head);
  res.end(payload);
}

/**
 * The URL of a request whose target is a plain path ("origin form"), or null for anything else
 * (answered 400 by the REST handler, which runs first for every request the RPC router does not
 * take). `new URL(target, base)` throws on targets such as "//", which would end in the
 * fallback's catch as a 500, and reads "//host/path" as another host's "/path".
 */
export function requestUrl(target: string | undefined): URL | null {
  const path = target ?? "/";
  if (!path.startsWith("/") || path.startsWith("//")) return null;
  try {
    return new URL(path, "http://localhost");
  } catch {
    return null;
  }
}

/** The path and query of a request target, and its URL only when someone asks. */
export interface RequestTarget {
  readonly pathname: string;
  /** The query with its "?", as URL's `search` ("" for none or an empty one). */
  readonly search: string;
  readonly href: () => string;
}

/**
 * A target whose path and query need none of the URL parser's work: the path only letters,
 * digits, "-", "_", "~" and "/" (no dot segments, no percent-escapes, no backslashes), the query
 * printable ASCII without "#". For such a target the parser's pathname is the path itself, and
 * URLSearchParams over the query reads what `url.searchParams` would (the parser's escapes of
 * `"`, `'`, `<` and `>` in a query are undone by the reading). A `new URL` per call was 3-4 % of
 * a billed call's CPU (bench/README.md, "CPU per billed call, seventh step").
 */
const PLAIN_TARGET = /^\/[\w~/-]*(?:\?[\x21\x22\x24-\x7e]*)?$/;

/**
 * `requestUrl` without the URL object for the plain targets every API client sends; null for the
 * targets requestUrl refuses.
 */
export function requestTarget(target: string | undefined): RequestTarget | null {
  const raw = target ?? "/";
  if (PLAIN_TARGET.test(raw) && !raw.startsWith("//")) {
    const at = raw.indexOf("?");
    return {
      pathname: at < 0 ? raw : raw.slice(0, at),
      search: at < 0 || at === raw.length - 1 ? "" : raw.slice(at),
      href: () => new URL(raw, "http://localhost").toString(),
    };
  }
  const url = requestUrl(raw);
  if (url === null) return null;
  return { pathname: url.pathname, search: url.search, href: () => url.toString() };
}

/** Every method of the services that has a google.api.http annotation, keyed by its path. */
export function restRoutesOf(services: readonly RestService[]): Map<string, RestRoute> {
  const routes = new Map<string, RestRoute>();
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const http = httpRouteOf(method);
      if (http === null) continue;
      const handler = (impl as Record<string, unknown>)[method.localName];
      if (typeof handler !== "function")
        throw new Error(`${service.typeName}.${method.name} has a REST route but no implementation`);
      const toJson = restJsonWriter(method.output);
      const parameters = new Set(method.input.fields.map((f) => f.name));
      routes.set(http.path, {
        service,
        method,
        ...http,
        parameters,
        invoke: async (request, ctx) => handler.call(impl, request, ctx),
        toJson: (response) => toJson(response),
      });
    }
  }
  return routes;
}

/** Builds the REST request handler; returns false when no REST route matches the path. */
export function createRestHandler(services: readonly RestService[], logger: Logger, shutdownSignal?: AbortSignal) {
  const routes = restRoutesOf(services);
  // The calls in flight, aborted with the shutdown signal's reason when it fires: one listener
  // for all of them instead of one added and removed per call.
  const live = new Set<RestContext>();
  shutdownSignal?.addEventListener(
    "abort",
    () => {
      for (const ctx of live) ctx.abort(shutdownSignal.reason);
    },
    { once: true },
  );
  return async function handleRest(req: NodeRequest, res: NodeResponse): Promise<boolean> {
    const target = requestTarget(req.url);
    if (target === null) {
      sendError(res, "bad_request", "The request target must be a path.");
      return true;
    }
    const route = routes.get(target.pathname);
    if (!route) return false;
    if (req.method !== route.verb) {
      sendError(res, "method_not_allowed", `Use ${route.verb} for ${route.path}.`, { allow: route.verb });
      return true;
    }
    let requestHeader: Headers;
    try {
      requestHeader = new NodeRequestHeaders(req);
    } catch {
      // Headers refuses a value it cannot carry (Node's parser lets some through).
      sendError(res, "bad_request", "A request header has a value that cannot be read.");
      return true;
    }
    const ctx = new RestContext(route, target, requestHeader);
    if (shutdownSignal?.aborted) ctx.abort(shutdownSignal.reason);
    else live.add(ctx);
    // The caller going away aborts a call still running; one that has answered has nothing to
    // stop (nothing listens to its signal then), and an abort dispatches an Event. A response
    // closes once, so `on` (`once` wraps the listener in another function per call).
    let running = true;
    res.on("close", () => {
      if (running) ctx.abort(REQUEST_DONE);
    });
    try {
      // URLSearchParams drops one leading "?", as URL does before its searchParams read the query.
      const query = new URLSearchParams(target.search);
      // Only REST sees parameter names: one it does not read (a misspelt `symbol=`) is ignored,
      // as the contract says, and named in x-signals-warnings (sent with a 200 only: an error's
      // headers come from the error). No query, no work.
      if (target.search !== "") {
        const unknown = [...query.keys()].filter((name) => !route.parameters.has(name));
        if (unknown.length > 0) addWarnings(ctx.responseHeader, unknownParameterWarnings(unknown));
      }
      const output = await route.invoke(requestFromQuery(route.method.input, query), ctx);
      // The handler's headers in the sorted order a fetch Headers iterates.
      sendJsonText(res, 200, route.toJson(output as Message), Object.fromEntries(ctx.responseHeader));
    } catch (err) {
      const code = errorCodeOf(err);
      const headers = err instanceof ConnectError ? Object.fromEntries(err.metadata) : {};
      if (code === "internal") {
        logger.error({ err: errorSummary(err) }, "unhandled error in REST handler");
        sendError(res, code);
      } else {
        sendError(res, code, err instanceof ConnectError ? err.rawMessage : undefined, headers);
      }
    } finally {
      running = false;
      live.delete(ctx);
    }
    return true;
  };
}
