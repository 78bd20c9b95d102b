/**
 * The failed-key budget is exact across processes (issue 23, item 6): with WORKERS=2 on
 * PostgreSQL, 300 random keys sent at once from one address get at most the budget of 401
 * before 429 (before: 200 × 401 for a budget of 100, each worker counting its own), and IPv6
 * callers count per /64 (before: per address, so rotating through a /64 bought a fresh budget).
 */

import { randomBytes } from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/accounts/api-key.ts";
import { httpGet } from "../support/http-load.ts";
import type { ServerProcess } from "../support/processes.ts";
import { connectionOwners } from "../support/socket-owners.ts";
import { usingPostgres } from "../support/test-db.ts";
import { startWorkersServers, type WorkersServers } from "../support/workers-servers.ts";

const LIMIT = 20;
const figures: Record<string, unknown> = {};
afterAll(() => console.log(`[reliability figures] failed-keys-workers ${JSON.stringify(figures)}`));

describe.runIf(usingPostgres)("failed-key budget with WORKERS=2 on PostgreSQL", () => {
  let deployment: WorkersServers;
  let server: ServerProcess;

  beforeAll(async () => {
    deployment = await startWorkersServers({
      internalToken: "failed-keys-workers-internal-token",
      env: {
        DB_POOL_SIZE: "6",
        FAILED_KEY_LIMIT: String(LIMIT),
        FAILED_KEY_WINDOW: "600",
        // X-Forwarded-For names the caller (the IPv6 test); without it the socket address counts.
        TRUST_PROXY: "true",
      },
    });
    server = deployment.servers[0]!;
    expect(server.workerPids).toHaveLength(2);
  }, 120_000);

  afterAll(async () => {
    await deployment?.close();
  });

  const call = (agent: http.Agent, headers: Record<string, string> = {}) =>
    httpGet(
      `${server.baseUrl}/api/v1/signals?symbols=BTC`,
      { "x-api-key": generateApiKey(), ...headers },
      agent,
      60_000,
    );

  it("300 random keys at once from one address: at most the budget of 401 across both workers, then 429", async () => {
    // Connections first, until both workers hold some (the workers take connections from the
    // kernel's queue as they are free, so one round may all go to one worker). Calls without a
    // key (401 api_key_required) open them and spend no budget.
    let flooder: http.Agent | undefined;
    let connectionsPerWorker: number[] = [];
    for (let round = 0; round < 20 && flooder === undefined; round++) {
      const agent = new http.Agent({ keepAlive: true, localAddress: "127.0.0.31", maxSockets: 300 });
      const opened = await Promise.all(
        Array.from({ length: 300 }, () => httpGet(`${server.baseUrl}/api/v1/signals`, {}, agent, 60_000)),
      );
      expect(opened.every((a) => a.status === 401 && a.body.includes("api_key_required"))).toBe(true);
      const owners = [...(await connectionOwners(server.port, server.workerPids)).values()];
      connectionsPerWorker = server.workerPids.map((pid) => owners.filter((o) => o === pid).length);
      if (new Set(owners).size === 2) flooder = agent;
      else agent.destroy();
    }
    expect(flooder, "both workers holding connections").toBeDefined();
    const wave = await Promise.all(Array.from({ length: 300 }, () => call(flooder!)));
    const after = await Promise.all(Array.from({ length: 50 }, () => call(flooder!)));
    flooder!.destroy();
    const count = (list: typeof wave, s: number) => list.filter((a) => a.status === s).length;
    figures.wave = {
      limit: LIMIT,
      calls: wave.length,
      answered401: count(wave, 401),
      answered429: count(wave, 429),
      after429: count(after, 429),
      connectionsPerWorker,
    };
    expect(count(wave, 401) + count(wave, 429)).toBe(300);
    expect(count(wave, 401)).toBe(LIMIT);
    expect(count(after, 429)).toBe(50);
    const blocked = wave.find((a) => a.status === 429)!;
    expect(JSON.parse(blocked.body)).toMatchObject({ ok: false, error: "rate_limited" });
    expect(Number(blocked.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("IPv6 callers count per /64: a new address in the same /64 gets no fresh budget, another /64 does", async () => {
    const agent = new http.Agent({ keepAlive: true, localAddress: "127.0.0.32", maxSockets: 40 });
    const inBlock = () => `2001:db8:77:1:${[0, 0, 0, 0].map(() => randomBytes(2).toString("hex")).join(":")}`;
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 10; i++) statuses.push((await call(agent, { "x-forwarded-for": inBlock() })).status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT)).toEqual(Array(10).fill(429));
    expect((await call(agent, { "x-forwarded-for": "2001:db8:77:2::1" })).status).toBe(401);
    figures.ipv6 = { calls: statuses.length + 1, answered401InOneSlash64: statuses.filter((s) => s === 401).length };
    agent.destroy();
  });
});
