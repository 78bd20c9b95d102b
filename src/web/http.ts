/**
 * HTTP plumbing of the web pages: cookies, form bodies, security headers, redirects, and who
 * the client is (address, TLS) with or without a trusted proxy in front.
 */
import type { ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

type FallbackArgs = Parameters<NonNullable<ConnectNodeAdapterOptions["fallback"]>>;
/** What the public listener's fallback receives (HTTP/1.1 or HTTP/2). */
export type WebRequest = FallbackArgs[0];
export type WebResponse = FallbackArgs[1];

/** Largest form body accepted; every form of the site is far smaller. */
export const MAX_FORM_BYTES = 16 * 1024;

/**
 * Sent with every page. Scripts and styles only from our own origin (files, no inline code),
 * no framing, no referrer to other sites (setup links carry a token in the URL).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self' https://checkout.stripe.com https://billing.stripe.com; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
});

/**
 * The account page's policy: its Buy / Subscribe / Manage billing forms redirect (303) to
 * Stripe's checkout and billing origins, and form-action covers redirects. With
 * STRIPE_API_BASE pointing elsewhere (a local fake in tests), that origin serves the sessions'
 * pages, so it is allowed too.
 */
export function accountPageCsp(payments: { stripe: { apiBase: { url: string } } | null }): string {
  const csp = SECURITY_HEADERS["content-security-policy"]!;
  const base = payments.stripe?.apiBase.url;
  if (!base || base === "https://api.stripe.com") return csp;
  return csp.replace("form-action 'self'", `form-action 'self' ${base}`);
}

/** Cookies of the request (first value wins for a repeated name). */
export function parseCookies(req: WebRequest): Map<string, string> {
  const cookies = new Map<string, string>();
  const header = req.headers.cookie;
  for (const part of (Array.isArray(header) ? header.join(";") : (header ?? "")).split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

/** A Set-Cookie value: always HttpOnly, SameSite=Strict and Path=/; Secure over TLS. */
export function cookie(name: string, value: string, options: { maxAgeSeconds: number; secure: boolean }): string {
  const parts = [`${name}=${value}`, "Path=/", "HttpOnly", "SameSite=Strict", `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`];
  if (options.secure) parts.push("Secure");
  return parts.join("; ");
}

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

/**
 * The client address for the sign-in throttle. Behind a trusted proxy, the last
 * X-Forwarded-For entry (the one our proxy appended; earlier ones are client-controlled).
 * IPv6 addresses count per /64, the block one subscriber usually holds.
 */
export function clientAddress(req: WebRequest, trustProxy: boolean): string {
  let address = req.socket.remoteAddress ?? "unknown";
  if (trustProxy) {
    const forwarded = header(req, "x-forwarded-for")?.split(",").map((s) => s.trim()).filter(Boolean);
    if (forwarded && forwarded.length > 0) address = forwarded[forwarded.length - 1]!;
  }
  return normaliseAddress(address);
}

/** IPv4-mapped IPv6 becomes IPv4; other IPv6 addresses become their /64 prefix. */
export function normaliseAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::") ? [...headGroups, ...Array(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill("0"), ...tailGroups] : headGroups;
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":") + "::/64";
}

/** Origins a form POST may name: the request's own (scheme + Host) and the configured public one. */
export function ownOrigins(req: WebRequest, publicBaseUrl: string, trustProxy: boolean): string[] {
  const origins = [new URL(publicBaseUrl).origin];
  const host = header(req, "host") ?? header(req, ":authority");
  if (host) origins.push(`${requestIsTls(req, trustProxy) ? "https" : "http"}://${host.toLowerCase()}`);
  return origins;
}

/** Outcome of reading a form body. */
export type FormResult = { ok: true; form: URLSearchParams } | { ok: false; status: 400 | 413 | 415; message: string };

/** Reads an application/x-www-form-urlencoded body of at most MAX_FORM_BYTES. */
export async function readForm(req: WebRequest): Promise<FormResult> {
  const type = (header(req, "content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return { ok: false, status: 415, message: "Forms must be sent as application/x-www-form-urlencoded." };
  const declared = Number(header(req, "content-length") ?? "0");
  if (declared > MAX_FORM_BYTES) return { ok: false, status: 413, message: "The form is too large." };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return { ok: false, status: 413, message: "The form is too large." };
    chunks.push(chunk);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    return { ok: false, status: 400, message: "The form is not valid UTF-8." };
  }
  return { ok: true, form: new URLSearchParams(text) };
}

/** Writes an HTML page with the security headers; pages are never cached (they carry CSRF tokens and account data). */
export function sendHtml(res: WebResponse, status: number, body: string, extra: Record<string, string | string[]> = {}): void {
  (res as ServerResponse).writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": "text/html; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
    ...extra,
  });
  res.end(body);
}

/** 303 See Other to a path of this site (after a POST, the browser follows with a GET). */
export function redirect(res: WebResponse, location: string, extra: Record<string, string | string[]> = {}): void {
  (res as ServerResponse).writeHead(303, { ...SECURITY_HEADERS, location, "cache-control": "no-store", "content-length": "0", ...extra });
  res.end();
}

/**
 * A path of this site to go back to after sign-in, or null. Only plain local paths: no
 * scheme, no host, no `//` or backslash tricks, so it can never send anyone elsewhere.
 */
export function safeLocalPath(raw: string | null | undefined): string | null {
  if (!raw || raw.length > 512 || !raw.startsWith("/") || raw.startsWith("//") || /[\\\s\u0000-\u001f]/.test(raw)) return null;
  try {
    const url = new URL(raw, "http://local.invalid");
    return url.origin === "http://local.invalid" ? url.pathname + url.search : null;
  } catch {
    return null;
  }
}
