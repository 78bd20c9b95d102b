/**
 * The OpenAPI document against a real server: it is served at GET /api/v1/openapi.json without a
 * key, a maintained validator (@apidevtools/swagger-parser) accepts it as OpenAPI 3.1 and refuses
 * a broken copy, it covers exactly the annotated methods and every error code, and a walk calls
 * every operation with valid and invalid input and provokes every status it documents: every
 * answer validates against the document (test/support/openapi-contract.ts) and every documented
 * status occurs.
 */

import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MoverSchema } from "../../gen/signals/v1/market_data_pb.js";
import { regenerateKey, setSubscription } from "../../src/accounts/accounts.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import { ERROR_CODES } from "../../src/errors.ts";
import { PUBLIC_REST_SERVICES, publicOpenApiDocument } from "../../src/server/public-api.ts";
import { httpRouteOf } from "../../src/server/rest.ts";
import { apiRequest } from "../support/api-request.ts";
import { expectMatchesOpenApi, openApiDocument, seenStatuses } from "../support/openapi-contract.ts";
import { type RawAnswer, rawHttp1 } from "../support/raw-http.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

type Json = Record<string, any>;
let db: TestDb;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDb();
  server = await startTestServer({
    db,
    env: {
      DAILY_CAP: "2",
      FREE_RATE_LIMIT: "4",
      HEADERS_TIMEOUT: "1",
      REQUEST_TIMEOUT: "2",
      FAILED_KEY_LIMIT: "100000",
      // The walk ends with the database closed: a charge cut off then is answered 503 this soon.
      CHARGE_RESOLVE_MS: "200",
    },
  });
});
afterAll(async () => {
  await server?.close();
  // The walk ends with the database closed under the server (503): closing again may fail.
  await db?.drop().catch(() => {});
});

/** `method` on the server, checked against the OpenAPI document. */
const call = (method: string, pathAndQuery: string, headers: Record<string, string> = {}) =>
  apiRequest(server.baseUrl, pathAndQuery, { method, headers, contract: true });

/** A raw HTTP/1.1 exchange on `path`, checked against the document. */
async function raw(method: string, path: string, head: string, extra: string[] = []): Promise<RawAnswer> {
  const answer = await rawHttp1(server.port, [head, ...extra]);
  expect(answer.end, head.slice(0, 80)).toBe("answer");
  expectMatchesOpenApi(method, path, { ...answer, body: JSON.parse(answer.body) });
  return answer;
}

const key = async (input: { plan?: string } = {}) => (await server.account(input)).apiKey;

describe("the OpenAPI document", () => {
  it("is served at GET /api/v1/openapi.json without a key, as generated from the descriptors", async () => {
    const res = await fetch(`${server.baseUrl}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(publicOpenApiDocument(server.config.publicBaseUrl));
  });

  it("is valid OpenAPI 3.1 for @apidevtools/swagger-parser, which refuses a broken copy", async () => {
    const doc = openApiDocument();
    expect(doc.openapi).toBe("3.1.0");
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    const broken = structuredClone(doc);
    delete broken.paths["/api/v1/signals"].get.responses["200"].description;
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow();
    const badRef = structuredClone(doc);
    badRef.paths["/api/v1/usage"].get.responses["200"].content["application/json"].schema = {
      $ref: "#/components/schemas/Nope",
    };
    await expect(SwaggerParser.validate(badRef as never)).rejects.toThrow();
  });

  it("covers exactly the annotated public methods, the x-api-key scheme and every error code", () => {
    const doc = openApiDocument();
    const routes = PUBLIC_REST_SERVICES.flatMap(({ service }) =>
      service.methods.map(httpRouteOf).filter((r) => r !== null),
    );
    expect(Object.keys(doc.paths).sort()).toEqual(routes.map((r) => r!.path).sort());
    for (const r of routes) expect(Object.keys(doc.paths[r!.path]), r!.path).toEqual([r!.verb.toLowerCase()]);
    expect(doc.components.securitySchemes.ApiKey).toMatchObject({ type: "apiKey", in: "header", name: "x-api-key" });
    expect(doc.components.schemas.ErrorBody.properties.error.enum).toEqual([...ERROR_CODES]);
    for (const path of Object.keys(doc.paths)) {
      const op = doc.paths[path].get;
      expect(op["x-codeSamples"].map((s: Json) => s.lang)).toEqual(["curl", "TypeScript", "Python"]);
      expect(op.responses["429"].headers["Retry-After"].required).toBe(true);
    }
    expect(doc.paths["/api/v1/signals"].get.parameters.map((p: Json) => p.name)).toContain("Idempotency-Key");
    // Movers carry no signal (the paid product): the field is gone from the schema, and its number is reserved.
    expect(Object.keys(doc.components.schemas.Mover.properties).sort()).toEqual([
      "change_24h_pct",
      "change_pct",
      "demo",
      "price",
      "symbol",
      "updated_at",
      "volume",
      "volume_24h",
    ]);
    expect(doc.components.schemas.Mover.required).not.toContain("signal");
    // `demo` marks the demo feed's coins and readings; it is written only when true, so it is optional.
    expect(doc.components.schemas.Mover.required).not.toContain("demo");
    expect(doc.components.schemas.SignalEntry.oneOf[0].required).not.toContain("demo");
    expect(doc.components.schemas.SignalEntry.oneOf[0].properties.demo.type).toBe("boolean");
    expect(MoverSchema.proto.reservedName).toEqual(["signal"]);
    expect(MoverSchema.proto.reservedRange.map((r) => [r.start, r.end])).toEqual([[7, 8]]);
    expect(doc.components.schemas.GetUsageResponse.required).toEqual(
      expect.arrayContaining([
        "credits_left",
        "grant_credits",
        "pack_credits",
        "calls_today",
        "daily_cap",
        "daily_reset_ts",
        "daily_reset_at",
        "next_grant_ts",
        "next_grant_at",
        "plan",
        "subscription_until",
      ]),
    );
  });
});

describe("a walk over every operation", () => {
  it("valid and invalid input, every documented status provoked, every answer valid", async () => {
    const doc = openApiDocument();
    const ops = Object.entries(doc.paths as Json).map(([path, item]) => ({ path, op: item.get as Json }));
    const kindOf = (path: string) =>
      path === "/api/v1/signals" ? "paid" : path === "/api/v1/usage" ? "usage" : "free";
    for (const { path, op } of ops) {
      const kind = kindOf(path);
      const params: Json[] = op.parameters.filter((p: Json) => p.in === "query");
      const valid = params
        .filter((p) => p.example !== undefined)
        .map((p) => `${p.name}=${encodeURIComponent(p.example)}`)
        .join("&");
      // Valid input (every documented example parameter), and unknown parameters (ignored).
      const k = await key();
      expect((await call("GET", `${path}?${valid}`, { "x-api-key": k })).status).toBe(200);
      expect((await call("GET", `${path}?unknown=1&${valid}`, { "x-api-key": k })).status).toBe(200);
      // Invalid input.
      if (kind === "free") {
        for (const bad of [
          "limit=abc",
          "limit=0",
          ...(params.some((p) => p.name === "cursor") ? ["cursor=not-ours"] : []),
          ...(params.some((p) => p.name === "since") ? ["since=yesterday"] : []),
        ]) {
          expect((await call("GET", `${path}?${bad}`, { "x-api-key": await key() })).body.error, bad).toBe(
            "bad_request",
          );
        }
      }
      if (kind === "paid") {
        expect((await call("GET", path, { "x-api-key": k, "idempotency-key": "x".repeat(300) })).status).toBe(400);
        const idem = await key();
        expect(
          (await call("GET", `${path}?symbols=BTC`, { "x-api-key": idem, "idempotency-key": "walk-1" })).status,
        ).toBe(200);
        expect(
          (await call("GET", `${path}?symbols=ETH`, { "x-api-key": idem, "idempotency-key": "walk-1" })).status,
        ).toBe(422);
        const basic = await key({ plan: "basic" });
        expect((await call("GET", path, { "x-api-key": basic })).body.error).toBe("node_tier_required");
        const drained = await server.account();
        await adjustTokens(
          server.db.handle,
          drained.accountId,
          "adjustment",
          -server.config.limits.monthlyGrant,
          "walk: empty",
          server.config.limits,
        );
        expect((await call("GET", path, { "x-api-key": drained.apiKey })).status).toBe(402);
      }
      // Keys.
      expect((await call("GET", path)).body.error).toBe("api_key_required");
      expect((await call("GET", path, { "x-api-key": "sig_live_nope" })).body.error).toBe("invalid_api_key");
      const regenerated = await server.account();
      await regenerateKey(server.db.handle, regenerated.accountId, server.clock());
      expect((await call("GET", path, { "x-api-key": regenerated.apiKey })).status).toBe(401);
      const expired = await server.account();
      await setSubscription(server.db.handle, expired.accountId, new Date(server.clock() - 1), server.clock());
      expect((await call("GET", path, { "x-api-key": expired.apiKey })).body.error).toBe("subscription_inactive");
      // Limits: the daily cap (paid) or the free calls of the minute.
      const busy = await key();
      let last = 0;
      for (let i = 0; i < 6 && last !== 429; i++) last = (await call("GET", path, { "x-api-key": busy })).status;
      expect(last).toBe(429);
      // The HTTP layer.
      expect((await call("POST", path, { "x-api-key": k })).status).toBe(405);
      expect((await call("GET", `${path}?symbols=${"A".repeat(20_000)}`, { "x-api-key": k })).status).toBe(414);
      await raw("GET", path, `GET ${path} HTTP/1.1\r\nHost: x\r\nx-pad: ${"p".repeat(20_000)}\r\n\r\n`);
      await raw("GET", path, `GET ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n`);
      await raw("GET", path, `GET ${path} HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n`);
    }
    // Requests that never finish their header block, all at once (each waits HEADERS_TIMEOUT).
    await Promise.all(ops.map(({ path }) => raw("GET", path, `GET ${path} HTTP/1.1\r\nHost: x\r\n`)));
    // The database goes away under the server: 503, nothing charged.
    const keys = await Promise.all(ops.map(() => key()));
    await db.handle.close();
    for (const [i, { path }] of ops.entries())
      expect((await call("GET", path, { "x-api-key": keys[i]! })).body.error).toBe("unavailable");

    for (const { path, op } of ops) {
      const documented = Object.keys(op.responses)
        .map(Number)
        .sort((a, b) => a - b);
      expect(
        [...(seenStatuses.get(`GET ${path}`) ?? [])].sort((a, b) => a - b),
        path,
      ).toEqual(documented);
    }
  });
});
