/**
 * Every cookie of the site: HttpOnly, SameSite=Strict, Path=/, and Secure over TLS (the
 * request's own, or a proxy's as TRUST_PROXY allows) or when the public address is https.
 */

import type { Context } from "hono";
import { getCookie, setCookie as setHonoCookie } from "hono/cookie";
import type { Config } from "../config.ts";
import { CSRF_COOKIE, isWellFormedCsrfCookie, newCsrfCookieValue } from "./csrf.ts";
import { requestIsTls, type WebRequest } from "./http.ts";

/** Name of the session cookie. */
export const SESSION_COOKIE = "sid";
const CSRF_COOKIE_MAX_AGE_S = 2 * 3600;

/** The site's cookie setters over its configuration; `nodeRequest` gives the request's socket. */
export function createCookies(config: Config, nodeRequest: (c: Context) => WebRequest) {
  const secure = (c: Context) =>
    requestIsTls(nodeRequest(c), config.trustProxy) || config.publicBaseUrl.startsWith("https:");

  const setCookie = (c: Context, name: string, value: string, maxAgeSeconds: number) =>
    setHonoCookie(c, name, value, {
      path: "/",
      httpOnly: true,
      sameSite: "Strict",
      maxAge: Math.max(0, Math.floor(maxAgeSeconds)),
      secure: secure(c),
    });

  return {
    setCookie,
    setSessionCookie: (c: Context, token: string) => setCookie(c, SESSION_COOKIE, token, config.sessionTtlMs / 1000),
    clearSessionCookie: (c: Context) => setCookie(c, SESSION_COOKIE, "", 0),
    /** The double-submit value of this browser; sets the cookie when it is new. */
    csrfCookie(c: Context): string {
      const existing = getCookie(c, CSRF_COOKIE);
      if (isWellFormedCsrfCookie(existing)) return existing;
      const value = newCsrfCookieValue();
      setCookie(c, CSRF_COOKIE, value, CSRF_COOKIE_MAX_AGE_S);
      return value;
    },
  };
}

export type Cookies = ReturnType<typeof createCookies>;
