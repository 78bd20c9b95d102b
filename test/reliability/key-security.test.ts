/**
 * Keys and accounts under attack and under scrutiny:
 *  - failed-key floods from one address are answered 429 once the budget is spent (REST and
 *    gRPC, many distinct keys, sequential and concurrent), while a known good key from that
 *    address keeps working and other addresses are unaffected;
 *  - no API key (nor its SHA-256, nor the internal token) appears anywhere in what the servers
 *    write, at LOG_LEVEL=trace, over a full scenario run by the real CLI against real server
 *    processes and an in-process server; the only places a key is printed are the ones that
 *    exist to print it (`account create`, `key regenerate`, the first-start demo key);
 *  - every method of every internal service refuses calls without the bearer token, and the
 *    internal listener binds to loopback by default.
 */

import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os, { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { generateApiKey } from "../../src/accounts/api-key.ts";
import { loadConfig } from "../../src/config.ts";
import { createBearerCheck } from "../../src/server/internal-auth.ts";
import { httpGet } from "../support/http-load.ts";
import { type CliResult, childEnv, runCli } from "../support/processes.ts";
import { killHard, listeningOf, spawnServer, type WatchedProcess } from "../support/reliability.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { startTestServer, INTERNAL_TOKEN as TEST_SERVER_TOKEN, type TestServer } from "../support/test-server.ts";

const figures: Record<string, unknown> = {};
afterAll(() => console.log(`[reliability figures] key-security ${JSON.stringify(figures)}`));

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** An HTTP agent whose connections come from `address` (127.0.0.0/8 is all loopback on Linux). */
const agentFrom = (address: string) => new http.Agent({ keepAlive: true, localAddress: address });

/** A gRPC transport whose connections come from `address`. */
function grpcFrom(baseUrl: string, address: string) {
  const url = new URL(baseUrl);
  const sessionManager = new Http2SessionManager(
    baseUrl,
    {},
    { createConnection: () => net.connect({ host: url.hostname, port: Number(url.port), localAddress: address }) },
  );
  return { transport: createGrpcTransport({ baseUrl, sessionManager }), close: () => sessionManager.abort() };
}

const randomKey = () => generateApiKey();

describe("failed-key floods", () => {
  const LIMIT = 20;
  let server: TestServer;
  let goodKey: string;

  beforeAll(async () => {
    server = await startTestServer({ env: { FAILED_KEY_LIMIT: String(LIMIT), FAILED_KEY_WINDOW: "60" } });
    goodKey = (await server.account()).apiKey;
  });
  afterAll(async () => {
    await server?.close();
  });

  const rest = (key: string, agent: http.Agent) =>
    httpGet(`${server.baseUrl}/api/v1/signals?symbols=BTC`, { "x-api-key": key }, agent);

  it(
    "one address, many distinct invalid keys: exactly the budget is answered " +
      "401, then 429 with Retry-After, not touching the database",
    async () => {
      const flooder = agentFrom("127.0.0.10");
      expect((await rest(goodKey, flooder)).status).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++)
        statuses.push((await rest(i % 5 === 0 ? `sig_live_bad${i}` : randomKey(), flooder)).status);
      expect(statuses.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
      expect(statuses.slice(LIMIT)).toEqual(Array(60 - LIMIT).fill(429));
      const blocked = await rest(randomKey(), flooder);
      expect(JSON.parse(blocked.body)).toMatchObject({ ok: false, error: "rate_limited" });
      expect(Number(blocked.headers["retry-after"])).toBeGreaterThan(0);
      // The good key that worked from this address keeps working...
      expect((await rest(goodKey, flooder)).status).toBe(200);
      // ...another address is not affected, neither for valid nor for invalid keys...
      const other = agentFrom("127.0.0.11");
      const { apiKey: freshKey } = await server.account();
      expect((await rest(freshKey, other)).status).toBe(200);
      expect((await rest(randomKey(), other)).status).toBe(401);
      // ...and a key never seen from the flooded address waits like the guesses (documented:
      // only keys that succeeded recently pass a blocked address).
      expect((await rest((await server.account()).apiKey, flooder)).status).toBe(429);
      figures.sequentialFlood = {
        limit: LIMIT,
        calls: 62,
        answered401: statuses.filter((s) => s === 401).length,
        answered429: statuses.filter((s) => s === 429).length + 1,
      };
      flooder.destroy();
      other.destroy();
    },
  );

  it(
    "the same over gRPC: UNAUTHENTICATED for the budget, " + "then RESOURCE_EXHAUSTED with reason rate_limited",
    async () => {
      const { transport, close } = grpcFrom(server.baseUrl, "127.0.0.12");
      const client = createClient(SignalsService, transport);
      const outcomes: string[] = [];
      for (let i = 0; i < LIMIT + 10; i++) {
        try {
          await client.getSignals({ symbols: "BTC" }, { headers: { "x-api-key": randomKey() } });
          outcomes.push("OK");
        } catch (e) {
          const err = ConnectError.from(e);
          outcomes.push(`${Code[err.code]}:${err.findDetails(ErrorInfoSchema)[0]?.reason}`);
        }
      }
      close();
      expect(outcomes.slice(0, LIMIT)).toEqual(Array(LIMIT).fill("Unauthenticated:invalid_api_key"));
      expect(outcomes.slice(LIMIT)).toEqual(Array(10).fill("ResourceExhausted:rate_limited"));
      figures.grpcFlood = { calls: outcomes.length, unauthenticated: LIMIT, resourceExhausted: 10 };
    },
  );

  it(
    "a concurrent flood of 300 guesses: exactly the budget is answered " +
      "401 (counted in the database), then everything is 429",
    async () => {
      const flooder = new http.Agent({ keepAlive: true, localAddress: "127.0.0.13", maxSockets: 300 });
      const wave = await Promise.all(Array.from({ length: 300 }, () => rest(randomKey(), flooder)));
      const after = await Promise.all(Array.from({ length: 50 }, () => rest(randomKey(), flooder)));
      flooder.destroy();
      const count = (list: typeof wave, s: number) => list.filter((a) => a.status === s).length;
      figures.concurrentFlood = {
        wave: wave.length,
        answered401: count(wave, 401),
        answered429: count(wave, 429),
        after429: count(after, 429),
      };
      expect(count(wave, 401) + count(wave, 429)).toBe(300);
      expect(count(wave, 401)).toBe(LIMIT);
      expect(count(after, 429)).toBe(50);
    },
  );
});

/** Calls with valid, invalid and misplaced keys, errors (401, 402, 403, 404, 422), idempotent calls, admin RPCs. */
async function scenario(
  target: { baseUrl: string; internalUrl: string; internalToken: string },
  key: string,
  accountId: number,
  cli?: (...args: string[]) => Promise<CliResult>,
) {
  const agent = new http.Agent({ keepAlive: true });
  const get = (query: string, headers: Record<string, string>) => httpGet(`${target.baseUrl}${query}`, headers, agent);
  const statuses: number[] = [];
  const record = async (p: Promise<{ status: number }>) => statuses.push((await p).status);
  await record(get("/api/v1/signals?symbols=BTC,ETH&tf=1h", { "x-api-key": key }));
  await record(get("/api/v1/signals", { "x-api-key": randomKey() }));
  await record(get("/api/v1/signals", { "x-api-key": `${key}x` }));
  await record(get("/api/v1/signals", { "x-api-key": key.toUpperCase() }));
  await record(get(`/api/v1/signals?api_key=${key}&symbols=${key}`, { "x-api-key": randomKey() }));
  await record(get("/api/v1/signals", { "x-api-key": key, "x-request-id": key }));
  await record(get("/api/v1/signals", { authorization: `Bearer ${key}` }));
  await record(get(`/api/v1/signals/${key}`, { "x-api-key": key }));
  await record(get("/api/v1/signals?symbols=BTC", { "x-api-key": key, "idempotency-key": "order-1" }));
  await record(get("/api/v1/signals?symbols=BTC", { "x-api-key": key, "idempotency-key": "order-1" }));
  await record(get("/api/v1/signals?symbols=ETH", { "x-api-key": key, "idempotency-key": "order-1" }));
  await record(get("/api/v1/signals", { "x-api-key": key, "idempotency-key": key }));
  // Connect (JSON) and gRPC.
  const connect = createClient(SignalsService, createConnectTransport({ baseUrl: target.baseUrl, httpVersion: "1.1" }));
  await connect.getSignals({ symbols: "BTC" }, { headers: { "x-api-key": key } });
  await connect.getSignals({ symbols: "BTC" }, { headers: { "x-api-key": randomKey() } }).catch(() => null);
  const sessions = new Http2SessionManager(target.baseUrl);
  const grpc = createClient(SignalsService, createGrpcTransport({ baseUrl: target.baseUrl, sessionManager: sessions }));
  await grpc.getSignals({ symbols: "ETH" }, { headers: { "x-api-key": key } });
  await grpc.getSignals({ symbols: "ETH" }, { headers: { "x-api-key": `${key}z` } }).catch(() => null);
  sessions.abort();
  // Operator actions, through the CLI when there is one, else over AdminService: 402, 403, back.
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${target.internalToken}`);
    return next(req);
  };
  const admin = createClient(
    AdminService,
    createConnectTransport({ baseUrl: target.internalUrl, httpVersion: "1.1", interceptors: [bearer] }),
  );
  const id = BigInt(accountId);
  const shown = await admin.getAccount({ accountId: id });
  await admin.adjustTokens({ accountId: id, delta: -shown.account!.creditsLeft, reason: "drain" });
  await record(get("/api/v1/signals", { "x-api-key": key }));
  await admin.addTokenPack({ accountId: id, amount: 10n });
  const subscription = (until: string) =>
    cli
      ? cli("subscription", "set", "--account", String(accountId), "--until", until, "--json")
      : admin.setSubscription({ accountId: id, until });
  await subscription("2020-01-01T00:00:00Z");
  await record(get("/api/v1/signals", { "x-api-key": key }));
  await subscription("2099-01-01T00:00:00Z");
  await record(get("/api/v1/signals", { "x-api-key": key }));
  // AdminService without the token (refused).
  await createClient(AdminService, createConnectTransport({ baseUrl: target.internalUrl, httpVersion: "1.1" }))
    .getAccount({ accountId: id })
    .catch(() => null);
  agent.destroy();
  return statuses;
}

/** Every secret and where it was seen, if anywhere, in `texts`. */
function findSecrets(secrets: Record<string, string>, texts: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [name, secret] of Object.entries(secrets)) {
    if (!secret) continue;
    // The whole secret, and for keys also a long piece of their random part.
    const needles = [secret];
    if (secret.startsWith("sig_live_")) needles.push(secret.slice(9, 9 + 16), secret.slice(9 + 16));
    for (const [where, text] of Object.entries(texts))
      for (const n of needles) if (text.includes(n)) found.push(`${name} in ${where}`);
  }
  return found;
}

const SERVERS = usingPostgres ? "two server processes on Postgres" : "a server process on the embedded database";
describe(`keys never appear in logs (${SERVERS}, LOG_LEVEL=trace)`, () => {
  const INTERNAL_TOKEN = "key-security-internal-token-7Qz";
  let dataDir: string;
  let drop: (() => Promise<void>) | null = null;
  let cliEnv: NodeJS.ProcessEnv;
  const servers: Array<{ p: WatchedProcess; baseUrl: string; internalUrl: string }> = [];
  const cliOutputs: Record<string, string> = {};
  const secrets: Record<string, string> = { internalToken: INTERNAL_TOKEN };
  let demoKey = "";

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "signals-keys-"));
    const base = { PORT: "0", INTERNAL_PORT: "0", INTERNAL_TOKEN, LOG_LEVEL: "trace", DEMO_FEED: "false" };
    let serverEnv: NodeJS.ProcessEnv;
    if (usingPostgres) {
      const database = await createPostgresDatabase();
      drop = database.drop;
      serverEnv = childEnv({ ...base, DATABASE_URL: database.url, DEMO_ACCOUNT: "false" });
      cliEnv = childEnv({ DATABASE_URL: database.url });
    } else {
      // The first embedded start prints a demo key on stderr, by design.
      serverEnv = childEnv({ ...base, DATA_DIR: dataDir, DEMO_ACCOUNT: "true" });
      cliEnv = childEnv({ DATA_DIR: dataDir, INTERNAL_TOKEN });
    }
    for (let i = 0; i < (usingPostgres ? 2 : 1); i++) {
      const p = spawnServer(serverEnv);
      const { port, internalPort } = await listeningOf(p);
      servers.push({ p, baseUrl: `http://127.0.0.1:${port}`, internalUrl: `http://127.0.0.1:${internalPort}` });
    }
    if (!usingPostgres) {
      await sleep(500);
      demoKey = /sig_live_[0-9A-Za-z]{36}/.exec(servers[0]!.p.stderr())?.[0] ?? "";
    }
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) await killHard(s.p);
    await drop?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    "a full scenario through the CLI and every protocol leaves " + "no key, key hash or internal token in any output",
    async () => {
      const cli = async (name: string, ...args: string[]) => {
        const result = await runCli(args, cliEnv);
        cliOutputs[`cli ${name} stdout`] = result.stdout;
        cliOutputs[`cli ${name} stderr`] = result.stderr;
        expect(result.code, `${name}: ${result.stderr}`).toBe(0);
        return result;
      };
      const created = JSON.parse(
        (await cli("account create", "account", "create", "--email", "keys@example.test", "--plan", "node", "--json"))
          .stdout,
      ) as { account_id: number; api_key: string };
      secrets.key1 = created.api_key;
      const run = (...args: string[]) => cli(args.slice(0, 2).join(" "), ...args);
      const statuses: number[] = [];
      for (const s of servers)
        statuses.push(
          ...(await scenario({ ...s, internalToken: INTERNAL_TOKEN }, created.api_key, created.account_id, run)),
        );
      const regenerated = JSON.parse(
        (await cli("key regenerate", "key", "regenerate", "--account", String(created.account_id), "--json")).stdout,
      ) as { api_key: string };
      secrets.key2 = regenerated.api_key;
      for (const s of servers) {
        statuses.push(
          (await httpGet(`${s.baseUrl}/api/v1/signals`, { "x-api-key": created.api_key }, new http.Agent())).status,
        );
        statuses.push(
          ...(await scenario({ ...s, internalToken: INTERNAL_TOKEN }, regenerated.api_key, created.account_id, run)),
        );
      }
      await cli("account show", "account", "show", "--account", String(created.account_id), "--json");
      await cli(
        "tokens adjust",
        "tokens",
        "adjust",
        "--account",
        String(created.account_id),
        "--delta",
        "5",
        "--reason",
        `looks like ${created.api_key.slice(0, 12)}`,
        "--json",
      );
      for (const s of servers) {
        s.p.child.kill("SIGTERM");
        await s.p.exited;
      }
      secrets.key1Sha256 = sha256(secrets.key1!);
      secrets.key2Sha256 = sha256(secrets.key2!);
      if (demoKey) secrets.demoKeySha256 = sha256(demoKey);

      const texts: Record<string, string> = {};
      servers.forEach((s, i) => {
        texts[`server ${i} stdout`] = s.p.stdout();
        // The first-start block on stderr prints the demo key by design; the rest must not.
        texts[`server ${i} stderr`] = demoKey ? s.p.stderr().split(demoKey).join("<demo key>") : s.p.stderr();
      });
      for (const [where, text] of Object.entries(cliOutputs)) {
        // `account create` and `key regenerate` print the new key once, by design: not searched.
        if (where === "cli account create stdout" || where === "cli key regenerate stdout") continue;
        texts[where] = text;
      }
      expect(findSecrets({ ...secrets, demoKey }, texts)).toEqual([]);
      // The demo key appears exactly in its first-start block (key line and curl line), nowhere else.
      if (demoKey) expect(servers[0]!.p.stderr().split(demoKey).length - 1).toBe(2);
      const lines = Object.entries(texts)
        .filter(([w]) => w.includes("stdout") && w.startsWith("server"))
        .reduce((n, [, t]) => n + t.split("\n").length, 0);
      figures.logScan = {
        processes: servers.length,
        logLines: lines,
        cliRuns: Object.keys(cliOutputs).length / 2,
        calls: statuses.length,
        secretsChecked: Object.keys(secrets).length + (demoKey ? 1 : 0),
      };
      // The scenario did what it says: 200s, 401s, 402, 403, 404, 422.
      for (const s of [200, 401, 402, 403, 404, 422]) expect(statuses, String(s)).toContain(s);
    },
  );
});

describe("keys never appear in logs (in-process server, LOG_LEVEL=trace)", () => {
  it("the same scenario with the logs option: no key, hash or token in any line", async () => {
    const logs = new PassThrough();
    let text = "";
    logs.on("data", (c: Buffer) => (text += c.toString("utf8")));
    const server = await startTestServer({ logs, env: { LOG_LEVEL: "trace" } });
    try {
      const { apiKey, accountId } = await server.account();
      const statuses = await scenario(
        { baseUrl: server.baseUrl, internalUrl: server.internalUrl, internalToken: TEST_SERVER_TOKEN },
        apiKey,
        accountId,
      );
      await sleep(200);
      expect(
        findSecrets(
          { apiKey, apiKeySha256: sha256(apiKey), internalToken: TEST_SERVER_TOKEN },
          { "in-process log": text },
        ),
      ).toEqual([]);
      expect(text.split("\n").length).toBeGreaterThan(statuses.length);
      figures.inProcessLogLines = text.split("\n").length;
    } finally {
      await server.close();
    }
  });
});

describe("the internal listener", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ feed: true });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Calls every method of `service` with an empty request; resolves with each outcome. */
  async function callAll(service: DescService, transport: ReturnType<typeof createGrpcTransport>) {
    const client = createClient(service, transport) as unknown as Record<string, (...a: unknown[]) => unknown>;
    const outcomes: Record<string, string> = {};
    for (const method of service.methods) {
      try {
        const fn = client[method.localName]!;
        if (method.methodKind === "unary") await fn({}, { timeoutMs: 5_000 });
        else if (method.methodKind === "client_streaming") await fn((async function* () {})(), { timeoutMs: 5_000 });
        else for await (const _ of fn({}, { timeoutMs: 2_000 }) as AsyncIterable<unknown>) void _;
        outcomes[method.name] = "OK";
      } catch (e) {
        const err = ConnectError.from(e);
        outcomes[method.name] = `${Code[err.code]}:${err.findDetails(ErrorInfoSchema)[0]?.reason}`;
      }
    }
    return outcomes;
  }

  it(
    "refuses every method of AdminService, IngestService and SignalEventsService " +
      "without the bearer token, or with a wrong one, over gRPC and Connect",
    async () => {
      let refused = 0;
      for (const service of [AdminService, IngestService, SignalEventsService]) {
        for (const token of [
          null,
          "wrong-token-but-long-enough",
          `${TEST_SERVER_TOKEN}x`,
          TEST_SERVER_TOKEN.slice(0, -1),
          `bearer ${TEST_SERVER_TOKEN}`,
        ]) {
          const auth: Interceptor = (next) => (req) => {
            if (token !== null)
              req.header.set("authorization", token.startsWith("bearer ") ? token : `Bearer ${token}`);
            return next(req);
          };
          const sessions = new Http2SessionManager(server.internalUrl);
          const outcomes = await callAll(
            service,
            createGrpcTransport({ baseUrl: server.internalUrl, sessionManager: sessions, interceptors: [auth] }),
          );
          sessions.abort();
          const connectOutcomes = await callAll(
            service,
            createConnectTransport({ baseUrl: server.internalUrl, httpVersion: "1.1", interceptors: [auth] }) as never,
          );
          for (const o of [...Object.values(outcomes), ...Object.values(connectOutcomes)]) {
            expect(o).toBe("Unauthenticated:unauthorized");
            refused++;
          }
        }
      }
      figures.internalRefusals = refused;
      // /healthz and /metrics are plain HTTP on the internal listener, for probes and scrapers.
      expect((await fetch(`${server.internalUrl}/healthz`)).status).toBe(200);
    },
  );

  it("compares the bearer token in constant time over digests, and accepts only the exact token", () => {
    const check = createBearerCheck("s3cret-token-0123456789");
    expect(check("Bearer s3cret-token-0123456789")).toBe(true);
    for (const bad of [
      null,
      undefined,
      "",
      "Bearer",
      "Bearer ",
      "bearer s3cret-token-0123456789",
      "Bearer  s3cret-token-0123456789",
      "Bearer s3cret-token-012345678",
      "Bearer s3cret-token-0123456789 ",
      "Basic s3cret-token-0123456789",
    ]) {
      expect(check(bad), String(bad)).toBe(false);
    }
  });

  it("binds to 127.0.0.1 by default and is not reachable on other interfaces", async () => {
    const config = loadConfig({});
    expect({ host: config.host, internalHost: config.internalHost }).toEqual({
      host: "127.0.0.1",
      internalHost: "127.0.0.1",
    });
    const other = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
    figures.otherInterface = other ?? "none";
    if (!other) return;
    const reach = (port: number) =>
      new Promise<string>((resolve) => {
        const s = net.connect({ host: other, port });
        const settle = (outcome: string) => {
          s.destroy();
          resolve(outcome);
        };
        s.once("connect", () => settle("connected"));
        s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
        setTimeout(() => settle("timeout"), 3_000).unref();
      });
    expect(await reach(server.internalPort)).not.toBe("connected");
    expect(await reach(server.port)).not.toBe("connected");
  });
});
