/**
 * gRPC clients find the schema by themselves: `buf curl` (node_modules/.bin) with no --schema
 * lists the public port's services and methods through server reflection and calls
 * SignalsService.GetSignals over gRPC (charged like any call); both reflection versions answer
 * (v1 and v1alpha), the internal listener reflects its own services only behind the bearer
 * token, and /docs offers the public .proto files for download.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixedSnapshot, SAMPLE_READINGS } from "../support/fixed-snapshot.ts";
import { PROJECT_ROOT } from "../support/processes.ts";
import { INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

const run = promisify(execFile);
const BUF = path.join(PROJECT_ROOT, "node_modules/.bin/buf");

let server: TestServer;
let apiKey: string;
beforeAll(async () => {
  server = await startTestServer({ snapshot: fixedSnapshot(SAMPLE_READINGS) });
  ({ apiKey } = await server.account());
});
afterAll(() => server?.close());

/** `buf curl` with the given arguments; resolves with its output and exit code. */
async function bufCurl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(BUF, ["curl", ...args], { cwd: "/", timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

describe("gRPC server reflection", () => {
  it("buf curl with no --schema lists the public services and methods, and calls GetSignals over gRPC", async () => {
    const services = await bufCurl("--protocol", "grpc", "--http2-prior-knowledge", "--list-services", server.baseUrl);
    expect(services.code, services.stderr).toBe(0);
    expect(services.stdout.trim().split("\n").sort()).toEqual(
      [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "signals.v1.MarketDataService",
        "signals.v1.SignalsService",
        "signals.v1.UsageService",
      ].sort(),
    );
    const methods = await bufCurl("--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", server.baseUrl);
    expect(methods.stdout).toContain("signals.v1.SignalsService/GetSignals");
    expect(methods.stdout).toContain("signals.v1.UsageService/GetUsage");
    expect(methods.stdout).not.toMatch(/AdminService|IngestService|FeederService/);
    const call = await bufCurl(
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `x-api-key: ${apiKey}`,
      "-d",
      '{"symbols":"BTC,ETH","tf":"1h"}',
      `${server.baseUrl}/signals.v1.SignalsService/GetSignals`,
    );
    expect(call.code, call.stderr).toBe(0);
    const body = JSON.parse(call.stdout) as {
      ok: boolean;
      tf: string;
      creditsLeft: string;
      signals: Array<{ symbol: string; signal?: string; price?: number }>;
    };
    expect(body).toMatchObject({ ok: true, tf: "1h", creditsLeft: "9999" });
    expect(body.signals.map((s) => [s.symbol, s.signal, s.price])).toEqual([
      ["BTC", "SIGNAL_LONG", 64210.5],
      ["ETH", "SIGNAL_NONE", 3120.25],
    ]);
  }, 120_000);

  it("the older v1alpha protocol answers too", async () => {
    const call = await bufCurl(
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--reflect-protocol",
      "grpc-v1alpha",
      "-H",
      `x-api-key: ${apiKey}`,
      "-d",
      "{}",
      `${server.baseUrl}/signals.v1.UsageService/GetUsage`,
    );
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout)).toMatchObject({ ok: true, plan: "node" });
  }, 60_000);

  it("the internal listener reflects its own services, only with the bearer token", async () => {
    const refused = await bufCurl(
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--list-services",
      server.internalUrl,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/not authenticated/i);
    const listed = await bufCurl(
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--reflect-header",
      `authorization: Bearer ${INTERNAL_TOKEN}`,
      "--list-services",
      server.internalUrl,
    );
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("signals.v1.AdminService");
    expect(listed.stdout).toContain("signals.v1.FeederService");
    expect(listed.stdout).not.toContain("signals.v1.SignalsService");
  }, 60_000);
});

describe("the .proto files on /docs", () => {
  it("are listed in the OpenAPI document and served as text, the public ones only", async () => {
    const doc = (await (await fetch(`${server.baseUrl}/api/v1/openapi.json`)).json()) as {
      info: { description: string };
    };
    const listed = [...doc.info.description.matchAll(/\]\(\/docs\/proto\/([^)]+)\)/g)].map((m) => m[1]!);
    expect(listed).toEqual(
      expect.arrayContaining([
        "signals/v1/signals.proto",
        "signals/v1/market_data.proto",
        "signals/v1/usage.proto",
        "signals/v1/errors.proto",
        "grpc/health/v1/health.proto",
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/rpc/error_details.proto",
      ]),
    );
    expect(listed.some((name) => /admin|ingest|feeder|events/.test(name))).toBe(false);
    for (const name of listed) {
      const res = await fetch(`${server.baseUrl}/docs/proto/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(await res.text()).toMatch(/^syntax = "proto3";$/m);
    }
    const signals = await (await fetch(`${server.baseUrl}/docs/proto/signals/v1/signals.proto`)).text();
    expect(signals).toContain("rpc GetSignals(GetSignalsRequest) returns (GetSignalsResponse)");
    expect((await fetch(`${server.baseUrl}/docs/proto/signals/v1/admin.proto`)).status).toBe(404);
    expect((await fetch(`${server.baseUrl}/docs/proto/../../package.json`)).status).toBe(404);
  });
});
