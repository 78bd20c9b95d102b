/**
 * The context sources' HTTP GET: a timeout, a User-Agent that names us, conditional headers,
 * and errors that say what the provider answered without repeating the URL (it may carry
 * an API key in its query).
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { IncomingMessage } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { retryAfterMs } from "../../retry.ts";
import { isPublicAddress } from "./public-address.ts";

export const USER_AGENT = "signals-feeder/0.1 (context sources; +https://github.com/)";

/** A provider answered with an error status. */
export class HttpStatusError extends Error {
  override name = "HttpStatusError";
  readonly status: number;
  /** From Retry-After, when the provider sent one. */
  readonly retryAfterMs: number | null;
  constructor(status: number, message: string, retryAfterMs: number | null) {
    super(message);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Redirect statuses; any other answer is returned to the caller as it is. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Redirects followed for one request at most. */
export const MAX_REDIRECTS = 3;

/** A provider's redirect that the feeder will not follow. */
export class RedirectRefused extends Error {
  override name = "RedirectRefused";
}

/**
 * GET with a timeout (and the caller's abort signal); the response is returned whatever its
 * status. The configured URL is the operator's choice and is fetched as it is; a redirect is the
 * provider's, so it is followed only to https on public addresses, each hop checked again and
 * the address checked when the connection is made (no DNS rebinding between check and connect),
 * at most MAX_REDIRECTS times (a feed answering `302 → http://127.0.0.1:<internal>/metrics`
 * made the feeder read the internal listener). Only the user agent, `accept` and the
 * conditional headers go along: a provider's API-key header never leaves for another host.
 */
export async function httpGet(
  url: string,
  options: { headers?: Record<string, string>; timeoutMs: number; signal?: AbortSignal },
): Promise<Response> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([timeout, ...(options.signal ? [options.signal] : [])]);
  try {
    let res = await fetch(url, {
      headers: { "user-agent": USER_AGENT, ...options.headers },
      signal,
      redirect: "manual",
    });
    let current = new URL(url);
    for (let hops = 0; REDIRECT_STATUSES.has(res.status); hops++) {
      const location = res.headers.get("location");
      if (location === null) return res;
      await res.body?.cancel().catch(() => undefined);
      if (hops === MAX_REDIRECTS) throw new RedirectRefused(`more than ${MAX_REDIRECTS} redirects`);
      let target: URL;
      try {
        target = new URL(location, current);
      } catch {
        throw new RedirectRefused("redirect to an unreadable location");
      }
      refuseUnlessHttpsPublic(target);
      res = await getFromPublicAddress(target, forwardedHeaders(options.headers), signal);
      current = target;
    }
    return res;
  } catch (err) {
    if (err instanceof RedirectRefused) throw err;
    const e = err as Error;
    if (timeout.aborted) throw new Error(`no answer within ${options.timeoutMs} ms`);
    if (options.signal?.aborted) throw new Error("stopped");
    throw new Error(`request failed: ${(e.cause as Error | undefined)?.message ?? e.message}`);
  }
}

/** Refuses a redirect target that is not https or names a non-public address literally. */
function refuseUnlessHttpsPublic(target: URL): void {
  const where = displayUrl(target.href);
  if (target.protocol !== "https:")
    throw new RedirectRefused(`redirect to ${where} not followed: only https redirects to public addresses are`);
  if (target.username !== "" || target.password !== "")
    throw new RedirectRefused(`redirect to ${where} not followed: it carries credentials`);
  const host = target.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0 && !isPublicAddress(host))
    throw new RedirectRefused(`redirect to ${where} not followed: not a public address`);
}

/** The caller's headers that may follow a redirect to another host. */
function forwardedHeaders(headers: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = { "user-agent": USER_AGENT, "accept-encoding": "identity" };
  for (const [name, value] of Object.entries(headers))
    if (FORWARDED_HEADERS.has(name.toLowerCase())) out[name.toLowerCase()] = value;
  return out;
}
const FORWARDED_HEADERS = new Set(["accept", "if-none-match", "if-modified-since"]);

/**
 * A DNS lookup for redirect hops that fails unless every address of the name is public; it is
 * what the socket connects with, so the address checked is the address used.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, "", 0);
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused !== undefined || addresses.length === 0) {
      return callback(
        Object.assign(new RedirectRefused(`redirect to ${hostname} not followed: not a public address`), {
          code: "ENOTFOUND",
        }),
        "",
        0,
      );
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

/** One https GET through `publicOnlyLookup`, as a fetch Response. */
function getFromPublicAddress(target: URL, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      target,
      { method: "GET", headers, signal, lookup: publicOnlyLookup, agent: false },
      (incoming) => resolve(responseOf(incoming)),
    );
    req.on("error", (err) =>
      reject(
        err instanceof RedirectRefused
          ? err
          : (err as Error & { cause?: unknown }).cause instanceof RedirectRefused
            ? (err as Error & { cause: Error }).cause
            : err,
      ),
    );
    req.end();
  });
}

/** A Node response as a fetch Response (statuses without a body get none). */
function responseOf(incoming: IncomingMessage): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const status = incoming.statusCode ?? 502;
  if (status === 204 || status === 205 || status === 304) {
    incoming.resume();
    return new Response(null, { status, headers });
  }
  return new Response(Readable.toWeb(incoming) as ReadableStream<Uint8Array>, { status, headers });
}

/** Reads the body as text within the same timeout rules as the request; a non-2xx status becomes HttpStatusError. */
export async function expectOk(
  res: Response,
  now: number,
  describe: (body: string) => string = (b) => b.slice(0, 200),
): Promise<Response> {
  if (res.ok || res.status === 304) return res;
  const body = await res.text().catch(() => "");
  throw new HttpStatusError(
    res.status,
    `HTTP ${res.status}${body.trim() ? `: ${describe(body).replace(/\s+/g, " ").trim()}` : ""}`,
    retryAfterMs(res.headers.get("retry-after"), now),
  );
}

/**
 * Largest body we read from a provider: a feed or a coin list is far smaller; a runaway answer is an error, not a
 * crash.
 */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The body as UTF-8 text, refusing one larger than MAX_BODY_BYTES. */
export async function readBody(res: Response, maxBytes = MAX_BODY_BYTES): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new Error(`answer of ${declared} bytes is larger than ${maxBytes}`);
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new Error(`answer larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The body parsed as JSON (within MAX_BODY_BYTES). */
export async function readJson<T>(res: Response): Promise<T> {
  const text = await readBody(res);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error("answer is not JSON");
  }
}

/** Origin and path of a URL, for logs and statuses (never its query, which may hold a key). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}
