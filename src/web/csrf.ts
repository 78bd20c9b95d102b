/**
 * Cross-site request forgery defences, all three applied to every POST:
 *  - a token in a hidden field: an HMAC of the session's secret (signed-in forms), or equal to
 *    the random `csrf` cookie (double submit, for the sign-in and setup forms that have no
 *    session yet); compared in constant time;
 *  - an Origin header, when the browser sends one, must be our own origin;
 *  - the session cookie itself is SameSite=Strict.
 */
import { createHmac, randomBytes } from "node:crypto";
import { secretsEqual } from "../accounts/api-key.ts";

/** Name of the hidden form field carrying the token. */
export const CSRF_FIELD = "csrf_token";
/** Name of the double-submit cookie of the forms used before sign-in. */
export const CSRF_COOKIE = "csrf";
const COOKIE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The form token of a session (stable for the session's life). */
export function sessionCsrfToken(csrfSecret: string): string {
  return createHmac("sha256", csrfSecret).update("signals-web-form-v1").digest("base64url");
}

/**
 * The token of one key-regeneration confirmation: bound to the session and to the key it
 * replaces (null: the first key), so it stops matching once that key is replaced.
 */
export function keyConfirmToken(csrfSecret: string, replacesKeyId: number | null): string {
  return createHmac("sha256", csrfSecret)
    .update(`signals-key-confirm-v1:${replacesKeyId ?? "none"}`)
    .digest("base64url");
}

/** True when the submitted token is the session's token. */
export function sessionCsrfMatches(csrfSecret: string, submitted: string | null): boolean {
  return submitted !== null && submitted !== "" && secretsEqual(sessionCsrfToken(csrfSecret), submitted);
}

/** A fresh value for the double-submit cookie. */
export function newCsrfCookieValue(): string {
  return randomBytes(32).toString("base64url");
}

/** True when the cookie value has our shape (a browser could send anything). */
export function isWellFormedCsrfCookie(value: string | undefined): value is string {
  return value !== undefined && COOKIE_PATTERN.test(value);
}

/** Double submit: the hidden field must equal the cookie, and the cookie must be one of ours. */
export function doubleSubmitMatches(cookie: string | undefined, submitted: string | null): boolean {
  return isWellFormedCsrfCookie(cookie) && submitted !== null && secretsEqual(cookie, submitted);
}

/**
 * Origins a form POST may come from: the configured public origin, and the origin the request
 * itself names (scheme + Host), which is what a browser sends for a same-origin form.
 */
export function originAllowed(origin: string | undefined, ownOrigins: readonly string[]): boolean {
  if (origin === undefined) return true; // older browsers and non-browser clients; the token still applies
  return ownOrigins.includes(origin);
}
