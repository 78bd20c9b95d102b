/**
 * What an operator sees: a request id on every log line of a request (and in the response),
 * Prometheus metrics on the internal listener, the standard gRPC health service and /healthz,
 * and the failed-key throttle answering floods from one address without hurting valid callers.
 */
import { PassThrough } from "node:stream";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { apiRequest } from "../support/api-request.ts";
import { fixedSnapshot, SAMPLE_READINGS } from "../support/fixed-snapshot.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let server: TestServer;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  const logs = new PassThrough();
  logs.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n"))
      if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  server = await startTestServer({
    snapshot: fixedSnapshot(SAMPLE_READINGS),
    logs,
    env: { LOG_LEVEL: "info", FAILED_KEY_LIMIT: "5", FAILED_KEY_WINDOW: "60" },
  });
});
afterAll(async () => {
  await server?.close();
});

const call = (key: string | null, headers: Record<string, string> = {}) =>
  apiRequest(server.baseUrl, "/api/v1/signals?symbols=BTC&tf=1h", { key, headers });

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe("request ids", () => {
  it("echoes a well-formed x-request-id and puts it on the access log line with the outcome", async () => {
    const { apiKey } = await server.account();
    const res = await call(apiKey, { "x-request-id": "trace-abc-123" });
    expect(res.headers.get("x-request-id")).toBe("trace-abc-123");
    await waitFor(() => lines.some((l) => l.reqId === "trace-abc-123"));
    const access = lines.find((l) => l.reqId === "trace-abc-123" && l.msg === "request");
    expect(access).toMatchObject({
      listener: "public",
      method: "GET",
      path: "/api/v1/signals",
      status: 200,
      outcome: "ok",
    });
  });

  it("replaces a malformed one with a fresh id and logs refusals with their code", async () => {
    const res = await call(null, { "x-request-id": "bad id with spaces" });
    const id = res.headers.get("x-request-id")!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await waitFor(() => lines.some((l) => l.reqId === id));
    expect(lines.find((l) => l.reqId === id)).toMatchObject({ status: 401, outcome: "api_key_required" });
  });

  it("tags every line written while serving a request, including error lines", async () => {
    const before = lines.length;
    await fetch(`${server.baseUrl}/nowhere`, { headers: { "x-request-id": "r-404" } });
    await waitFor(() => lines.slice(before).some((l) => l.reqId === "r-404"));
    const during = lines.slice(before).filter((l) => l.msg === "request");
    expect(during.every((l) => typeof l.reqId === "string")).toBe(true);
  });
});

describe("metrics on the internal listener", () => {
  it("counts calls by protocol and outcome and exposes charge latency, pool, outbox and process metrics", async () => {
    const { apiKey } = await server.account();
    await call(apiKey);
    await call(`sig_live_${"A".repeat(32)}`);
    const client = createClient(
      (await import("../../gen/signals/v1/signals_pb.js")).SignalsService,
      createGrpcTransport({ baseUrl: server.baseUrl }),
    );
    await client.getSignals({ symbols: "BTC", tf: "1h" }, { headers: { "x-api-key": apiKey } });
    const res = await fetch(`${server.internalUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toMatch(/signals_calls_total\{protocol="rest",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/signals_calls_total\{protocol="rest",outcome="invalid_api_key"\} [1-9]/);
    expect(text).toMatch(/signals_calls_total\{protocol="grpc",outcome="ok"\} 1/);
    expect(text).toMatch(/signals_charge_duration_seconds_count\{path="grouped"\} [1-9]/);
    expect(text).toContain(`signals_db_pool_size ${server.config.dbPoolSize}`);
    expect(text).toContain("signals_outbox_pending 0");
    expect(text).toContain("signals_outbox_backlog_scrape 1");
    expect(text).toContain("process_resident_memory_bytes");
    // Not on the public listener.
    expect((await fetch(`${server.baseUrl}/metrics`)).status).toBe(404);
  });
});

describe("health", () => {
  it("answers the standard gRPC health check on the public port, and /healthz on the internal one", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect((await health.check({ service: "signals.v1.SignalsService" })).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );
    await expect(health.check({ service: "nope.v1.Nothing" })).rejects.toMatchObject({ code: 5 });
    const res = await fetch(`${server.internalUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, database: "up" });
  });
});

describe("failed-key flood from one address", () => {
  it(
    "is answered 429 once its budget is spent, without a " + "database lookup, while a known good key still works",
    async () => {
      const { apiKey } = await server.account();
      expect((await call(apiKey)).status).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await call(`sig_live_${String(i).padStart(32, "x")}`)).status);
      // The earlier test's invalid key counts too: budget 5 per address.
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
      expect(statuses.slice(-3)).toEqual([429, 429, 429]);
      const blocked = await call(`sig_live_${"Z".repeat(32)}`);
      expect(blocked.status).toBe(429);
      expect(blocked.body).toMatchObject({ ok: false, error: "rate_limited" });
      expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
      // The valid caller from the same address is not hurt.
      expect((await call(apiKey)).status).toBe(200);
      // A call without a key is not a guess: still 401.
      expect((await call(null)).status).toBe(401);
      // The window ends: guesses are answered 401 again.
      server.clock.advance(61_000);
      expect((await call(`sig_live_${"Y".repeat(32)}`)).status).toBe(401);
    },
  );
});
