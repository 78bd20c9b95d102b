/**
 * Every method of the public API on every protocol (REST, Connect, gRPC, gRPC-Web) is behind
 * the one API-key guard: without a key, with an empty, a malformed or a regenerated key it is
 * refused with the contract's 401 and machine code, and the refusal is counted under its own
 * protocol. The methods come from the public API's list (server/public-api.ts), so a service
 * or a protocol added without the guard fails here. A valid key is served on every cell, so a
 * refusal cannot come from a request the test got wrong.
 */

import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { regenerateKey } from "../../src/accounts/accounts.ts";
import { PUBLIC_REST_SERVICES } from "../../src/server/public-api.ts";
import { httpRouteOf } from "../../src/server/rest.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

/** What a call ended with, the same way on every protocol: "ok" or the machine code. */
type Outcome = { status: "ok" } | { status: "refused"; reason: string | undefined; unauthenticated: boolean };

interface Protocol {
  /** The protocol's name in the handler context (the metrics label). */
  readonly name: string;
  call(method: DescMethod, apiKey: string | null): Promise<Outcome>;
}

const METHODS: DescMethod[] = PUBLIC_REST_SERVICES.flatMap(({ service }) => service.methods);

function restProtocol(server: TestServer): Protocol {
  return {
    name: "rest",
    async call(method, apiKey) {
      const route = httpRouteOf(method);
      if (route === null) throw new Error(`${method.name} has no REST route`);
      const res = await fetch(`${server.baseUrl}${route.path}`, {
        method: route.verb,
        headers: apiKey === null ? {} : { "x-api-key": apiKey },
      });
      const body = (await res.json()) as { ok: boolean; error?: string };
      if (res.status === 200 && body.ok) return { status: "ok" };
      return { status: "refused", reason: body.error, unauthenticated: res.status === 401 };
    },
  };
}

function rpcProtocol(name: string, transport: Transport): Protocol {
  return {
    name,
    async call(method, apiKey) {
      const client = createClient(method.parent, transport) as unknown as Record<
        string,
        (request: unknown, options: object) => Promise<unknown>
      >;
      try {
        await client[method.localName]!(create(method.input), {
          headers: apiKey === null ? {} : { "x-api-key": apiKey },
          timeoutMs: 10_000,
        });
        return { status: "ok" };
      } catch (e) {
        const err = ConnectError.from(e);
        return {
          status: "refused",
          reason: err.findDetails(ErrorInfoSchema)[0]?.reason,
          unauthenticated: err.code === Code.Unauthenticated,
        };
      }
    },
  };
}

let server: TestServer;
let sessions: Http2SessionManager;
let protocols: Protocol[];

beforeAll(async () => {
  // A budget of failed keys large enough for the whole table from one address.
  server = await startTestServer({ env: { FAILED_KEY_LIMIT: "100000", FREE_RATE_LIMIT: "100000" } });
  sessions = new Http2SessionManager(server.baseUrl);
  protocols = [
    restProtocol(server),
    rpcProtocol("connect", createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })),
    rpcProtocol("grpc", createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: sessions })),
    rpcProtocol("grpc-web", createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })),
  ];
});

afterAll(async () => {
  sessions?.abort();
  await server?.close();
});

describe("the API-key guard on every method and every protocol", () => {
  it("covers the paid, free and usage methods", () => {
    expect(METHODS.map((m) => `${m.parent.name}.${m.name}`)).toEqual(
      expect.arrayContaining(["SignalsService.GetSignals", "MarketDataService.GetNews", "UsageService.GetUsage"]),
    );
  });

  it(
    "refuses a missing, empty, malformed or regenerated " + "key with 401 and its code, and serves a valid one",
    async () => {
      const { accountId, apiKey: regenerated } = await server.account();
      const { apiKey: valid } = await regenerateKey(server.db.handle, accountId, server.clock());
      const cases: [key: string | null, reason: string][] = [
        [null, "api_key_required"],
        ["", "api_key_required"],
        ["not-a-key", "invalid_api_key"],
        [`sig_live_${"A".repeat(32)}`, "invalid_api_key"],
        [regenerated, "invalid_api_key"],
      ];
      const seen: string[] = [];
      const expected: string[] = [];
      for (const protocol of protocols) {
        for (const method of METHODS) {
          const cell = `${protocol.name} ${method.parent.name}.${method.name}`;
          for (const [key, reason] of cases) {
            seen.push(`${cell} ${JSON.stringify(key)}: ${JSON.stringify(await protocol.call(method, key))}`);
            expected.push(
              `${cell} ${JSON.stringify(key)}: ${JSON.stringify({ status: "refused", reason, unauthenticated: true })}`,
            );
          }
          seen.push(`${cell} valid: ${JSON.stringify(await protocol.call(method, valid))}`);
          expected.push(`${cell} valid: ${JSON.stringify({ status: "ok" })}`);
        }
      }
      expect(seen).toEqual(expected);
    },
  );

  it("counts each refusal under its method and protocol", async () => {
    for (const protocol of protocols) for (const method of METHODS) await protocol.call(method, null);
    const metrics = await (await fetch(`${server.internalUrl}/metrics`)).text();
    for (const protocol of protocols) {
      expect(metrics, protocol.name).toMatch(
        new RegExp(`signals_calls_total\\{protocol="${protocol.name}",outcome="api_key_required"\\} [1-9]`),
      );
      for (const method of METHODS.filter((m) => m.parent.name !== "SignalsService")) {
        const labels = `method="${method.name}",protocol="${protocol.name}",outcome="api_key_required"`;
        expect(metrics, `${protocol.name} ${method.name}`).toMatch(
          new RegExp(`signals_free_calls_total\\{${labels}\\} [1-9]`),
        );
      }
    }
  });
});
