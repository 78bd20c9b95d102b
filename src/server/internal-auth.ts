/**
 * Bearer-token check for the internal listener. The expected token is kept only as its
 * SHA-256 digest and compared in constant time; a token that can change (the rotated token
 * file) is asked for at each check and its digest recomputed only when it changed.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Interceptor } from "@connectrpc/connect";
import { serviceError } from "../errors.ts";

/** Returns a checker for `authorization: Bearer <token>` header values. */
export function createBearerCheck(
  token: string | (() => string),
): (authorization: string | null | undefined) => boolean {
  const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();
  const current = typeof token === "string" ? () => token : token;
  let known = current();
  let expected = digest(known);
  return (authorization) => {
    const now = current();
    if (now !== known) {
      known = now;
      expected = digest(now);
    }
    const match = /^Bearer (.+)$/.exec(authorization ?? "");
    const given = createHash("sha256")
      .update(match?.[1] ?? "", "utf8")
      .digest();
    // Compare even when the header is malformed, so timing does not reveal which check failed.
    return timingSafeEqual(expected, given) && match !== null;
  };
}

/** Connect interceptor refusing every internal RPC without the bearer token. */
export function bearerAuthInterceptor(check: (authorization: string | null) => boolean): Interceptor {
  return (next) => async (req) => {
    if (!check(req.header.get("authorization"))) throw serviceError("unauthorized");
    return next(req);
  };
}
