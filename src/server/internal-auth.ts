/**
 * Bearer-token check for the internal listener. The expected token is kept only as its
 * SHA-256 digest and compared in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Interceptor } from "@connectrpc/connect";
import { serviceError } from "../errors.ts";

/** Returns a checker for `authorization: Bearer <token>` header values. */
export function createBearerCheck(token: string): (authorization: string | null | undefined) => boolean {
  const expected = createHash("sha256").update(token, "utf8").digest();
  return (authorization) => {
    const match = /^Bearer (.+)$/.exec(authorization ?? "");
    const given = createHash("sha256").update(match?.[1] ?? "", "utf8").digest();
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
