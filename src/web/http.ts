/**
 * What the web pages need to know about a request that hono does not tell: who the client is
 * (address, TLS) with or without a trusted proxy in front, which origins are ours, and which
 * redirect targets are safe.
 */
import type { TLSSocket } from "node:tls";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { callerAddress, normaliseAddress } from "../accounts/address-group.ts";

type FallbackArgs = Parameters<NonNullable<ConnectNodeAdapterOptions["fallback"]>>;
/** What the public listener's fallback receives (HTTP/1.1 or HTTP/2). */
export type WebRequest = FallbackArgs[0];
export type WebResponse = FallbackArgs[1];

/** First value of a request header. */
export function header(req: WebRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * True when the browser reached us over TLS: directly, or through a trusted proxy that says
 * so in X-Forwarded-Proto.
 */
export function requestIsTls(req: WebRequest, trustProxy: boolean): boolean {
  if ((req.socket as TLSSocket).encrypted) return true;
  return trustProxy && header(req, "x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https";
}

/** The client address for the sign-in throttle: the caller's address, grouped (IPv6 per /64). */
export function clientAddress(req: WebRequest, trustProxy: boolean): string {
  return normaliseAddress(callerAddress(req.headers["x-forwarded-for"], req.socket.remoteAddress, trustProxy));
}

/** IPv4-mapped IPv6 becomes IPv4; other IPv6 addresses become their /64 prefix (shared with the failed-key budget). */
export { normaliseAddress };

/** Origins a form POST may name: the request's own (scheme + Host) and the configured public one. */
export function ownOrigins(req: WebRequest, publicBaseUrl: string, trustProxy: boolean): string[] {
  const origins = [new URL(publicBaseUrl).origin];
  const host = header(req, "host") ?? header(req, ":authority");
  if (host) origins.push(`${requestIsTls(req, trustProxy) ? "https" : "http"}://${host.toLowerCase()}`);
  return origins;
}

/**
 * A path of this site to go back to after sign-in, or null: the path and query of `raw` resolved
 * against the site's origin, accepted only when the *normalised* result is still a plain local
 * path. Checking the raw text alone is not enough: `/.//evil.example` passes a raw check and
 * normalises to `//evil.example`, which a browser follows to another host.
 * So the result itself must start with one `/`, hold no `//` and no backslash in its path (also
 * once percent-decoded: `/%2F%2Fevil`), and resolve to the same origin when read again.
 */
export function safeLocalPath(raw: string | null | undefined, siteOrigin: string): string | null {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > MAX_LOCAL_PATH_LENGTH) return null;
  // Whitespace and control characters are refused, not stripped as the URL parser would.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it refuses
  if (!raw.startsWith("/") || /[\\\s\u0000-\u001f\u007f]/.test(raw)) return null;
  const origin = new URL(siteOrigin).origin;
  let url: URL;
  try {
    url = new URL(raw, origin);
  } catch {
    return null;
  }
  if (url.origin !== origin || url.username !== "" || url.password !== "") return null;
  const result = url.pathname + url.search;
  if (!isPlainLocalPath(url.pathname)) return null;
  let decoded: string;
  try {
    decoded = decodeURIComponent(url.pathname);
  } catch {
    return null;
  }
  if (!isPlainLocalPath(decoded)) return null;
  // The result read again must name the same place on the same origin.
  const again = new URL(result, origin);
  return again.origin === origin && again.pathname + again.search === result ? result : null;
}

/** Longest `next` accepted (longer ones are dropped, not cut). */
const MAX_LOCAL_PATH_LENGTH = 512;

/** One leading slash, no empty segment that a browser would read as a host, no backslash. */
function isPlainLocalPath(path: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it refuses
  return path.startsWith("/") && !path.includes("//") && !path.includes("\\") && !/[\u0000-\u001f\u007f]/.test(path);
}
