/**
 * Product rule: historical signal lists, win rates and backtests (the track record) are never
 * offered through the API; they live only on the members' web chart pages (session sign-in).
 *
 * Proof, against a real server with data in every dataset and real signals:
 *  1. every service in gen/ is probed on the public port, which tells the served methods
 *     (SignalsService, MarketDataService, health) from the internal ones;
 *  2. no served method, and no field, message or enum of its request or response (recursively),
 *     is named like a track record; the REST routes are exactly the six documented ones;
 *  3. every REST route and every served unary method called with a valid key answers bodies
 *     whose keys are none of those names;
 *  4. guessed paths (REST and RPC) answer 404, and the chart page refuses an API key alone.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { DescEnum, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpRouteOf } from "../../src/server/rest.ts";
import { datasetFixture, feedCoins, H, storeDatasets } from "../support/market-data-fixtures.ts";
import { jsonKeys } from "../support/proto-json.ts";
import { structureBreak } from "../support/structure-break.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

/** Names a track record would carry: history lists, win rates, backtests, trades and results. */
const FORBIDDEN = new RegExp(
  [
    ...["histor", "win_?rate", "winrate", "wins\\b", "backtest", "track_?record", "trackrecord", "\\btrades?\\b"],
    ...["trades_", "pnl", "profit", "performance", "hit_?rate", "accuracy", "results?\\b"],
  ].join("|"),
  "i",
);

const GEN_DIR = fileURLToPath(new URL("../../gen/", import.meta.url));

/** Every service descriptor generated from proto/ (and the health proto), found by walking gen/. */
async function allServices(): Promise<DescService[]> {
  const files = readdirSync(GEN_DIR, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("_pb.js"));
  const services = new Map<string, DescService>();
  for (const file of files) {
    const mod = (await import(pathToFileURL(path.join(GEN_DIR, file)).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      const desc = value as { kind?: string; typeName?: string };
      if (desc?.kind === "service" && desc.typeName) services.set(desc.typeName, value as DescService);
    }
  }
  return [...services.values()];
}

/** Every name reachable from a message: its own, its fields', nested messages' and enums' (and enum values'). */
function namesOf(message: DescMessage, into = new Set<string>(), visited = new Set<string>()): Set<string> {
  if (visited.has(message.typeName)) return into;
  visited.add(message.typeName);
  into.add(message.name);
  for (const field of message.fields) {
    into.add(field.name);
    into.add(field.jsonName);
    const nested =
      field.fieldKind === "message"
        ? field.message
        : field.fieldKind === "list" && field.listKind === "message"
          ? field.message
          : field.fieldKind === "map" && field.mapKind === "message"
            ? field.message
            : undefined;
    if (nested) namesOf(nested, into, visited);
    const en: DescEnum | undefined =
      field.fieldKind === "enum"
        ? field.enum
        : field.fieldKind === "list" && field.listKind === "enum"
          ? field.enum
          : undefined;
    if (en) {
      into.add(en.name);
      for (const v of en.values) into.add(v.name);
    }
  }
  return into;
}

let server: TestServer;
let apiKey: string;
const served: DescMethod[] = [];
const notServed: DescMethod[] = [];

/** True when the public port serves this RPC (a Connect POST that does not reach the JSON 404 fallback). */
async function isServed(method: DescMethod): Promise<boolean> {
  const res = await fetch(`${server.baseUrl}/${method.parent.typeName}/${method.name}`, {
    method: "POST",
    headers: { "content-type": "application/json", "connect-protocol-version": "1" },
    body: "{}",
  });
  const text = await res.text();
  const fallback404 = res.status === 404 && text.includes('"error":"not_found"') && text.includes('"ok":false');
  return !fallback404;
}

beforeAll(async () => {
  server = await startTestServer({ feed: true });
  const now = server.clock();
  // Real signals, with signal events stored (what the chart pages' track record is built from).
  const { history, breaker } = structureBreak(now - 61 * H);
  await feedCoins(server, [{ symbol: "ZZB", closed: [...history, breaker], forming: null }]);
  await storeDatasets(server, datasetFixture(now));
  ({ apiKey } = await server.account());
  for (const service of await allServices()) {
    for (const method of service.methods) ((await isServed(method)) ? served : notServed).push(method);
  }
});
afterAll(async () => {
  await server?.close();
});

describe("no API path exposes the track record", () => {
  it("the detector recognises track-record names (so the checks below can fail)", () => {
    for (const name of [
      "signal_history",
      "history",
      "win_rate",
      "winRate",
      "wins",
      "backtest",
      "track_record",
      "trades",
      "pnl",
      "result",
      "GetSignalHistory",
      "performance",
    ]) {
      expect(FORBIDDEN.test(name), name).toBe(true);
    }
    for (const name of [
      "signals",
      "signal_id",
      "updated_at",
      "change_24h_pct",
      "volume_leaders",
      "credits_left",
      "rank",
      "window",
      "next_cursor",
    ]) {
      expect(FORBIDDEN.test(name), name).toBe(false);
    }
  });

  it(
    "the public port serves exactly SignalsService, MarketDataService, " +
      "UsageService, the health service and server reflection",
    () => {
      const names = (ms: DescMethod[]) => ms.map((m) => `${m.parent.typeName}/${m.name}`).sort();
      expect(names(served)).toEqual([
        "grpc.health.v1.Health/Check",
        "grpc.health.v1.Health/Watch",
        "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        "signals.v1.MarketDataService/GetDerivatives",
        "signals.v1.MarketDataService/GetFundamentals",
        "signals.v1.MarketDataService/GetMacro",
        "signals.v1.MarketDataService/GetMovers",
        "signals.v1.MarketDataService/GetNews",
        "signals.v1.SignalsService/GetSignals",
        "signals.v1.UsageService/GetUsage",
      ]);
      // Internal services (the signal event stream among them) are not reachable there.
      expect(new Set(notServed.map((m) => m.parent.typeName))).toEqual(
        new Set([
          "signals.v1.AdminService",
          "signals.v1.IngestService",
          "signals.v1.DataIngestService",
          "signals.v1.FeederService",
          "signals.v1.SignalEventsService",
        ]),
      );
    },
  );

  it("no served method, message, field or enum is named like a track record", () => {
    for (const method of served) {
      expect(method.name).not.toMatch(FORBIDDEN);
      for (const name of [...namesOf(method.input), ...namesOf(method.output)])
        expect(name, `${method.parent.typeName}/${method.name}: ${name}`).not.toMatch(FORBIDDEN);
    }
  });

  it("the REST routes from the annotations are exactly the paid and the six free endpoints (usage among them)", () => {
    const routes = served.map(httpRouteOf).filter((r) => r !== null);
    expect(routes.map((r) => `${r!.verb} ${r!.path}`).sort()).toEqual([
      "GET /api/v1/derivatives",
      "GET /api/v1/fundamentals",
      "GET /api/v1/macro",
      "GET /api/v1/movers",
      "GET /api/v1/news",
      "GET /api/v1/signals",
      "GET /api/v1/usage",
    ]);
    for (const r of routes) expect(r!.path).not.toMatch(FORBIDDEN);
  });

  it("every REST answer and every served unary RPC answer carries no track-record key", async () => {
    const queries = ["", "?tf=1h", "?tf=1h&symbols=ZZB,BTC", "?limit=100"];
    for (const route of served.map(httpRouteOf).filter((r) => r !== null)) {
      for (const q of queries) {
        const res = await fetch(`${server.baseUrl}${route!.path}${q}`, { headers: { "x-api-key": apiKey } });
        const body = (await res.json()) as Record<string, unknown>;
        expect(res.status, `${route!.path}${q}`).toBe(200);
        for (const key of jsonKeys(body)) expect(key, `${route!.path}${q}`).not.toMatch(FORBIDDEN);
      }
    }
    // The premise: real data came back (a signal with its id, rows of every dataset).
    const signals = (await (
      await fetch(`${server.baseUrl}/api/v1/signals?symbols=ZZB&tf=1h`, { headers: { "x-api-key": apiKey } })
    ).json()) as { signals: Array<{ signal_id: string | null }> };
    expect(signals.signals[0]!.signal_id).toMatch(/^ZZB-1h-/);
    for (const method of served.filter((m) => m.methodKind === "unary")) {
      const res = await fetch(`${server.baseUrl}/${method.parent.typeName}/${method.name}`, {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1", "x-api-key": apiKey },
        body: JSON.stringify(
          method.name === "GetSignals" || method.name === "GetMovers" ? { tf: "1h", symbols: "ZZB" } : {},
        ),
      });
      expect(res.status, method.name).toBe(200);
      for (const key of jsonKeys(await res.json())) expect(key, method.name).not.toMatch(FORBIDDEN);
    }
  });

  it("guessed REST paths and RPC names answer 404, with or without a key", async () => {
    const guesses = [
      "/api/v1/track-record",
      "/api/v1/track_record",
      "/api/v1/trackrecord",
      "/api/v1/history",
      "/api/v1/signals/history",
      "/api/v1/signal-history",
      "/api/v1/signals/track-record",
      "/api/v1/win-rates",
      "/api/v1/winrate",
      "/api/v1/backtest",
      "/api/v1/backtests",
      "/api/v1/performance",
      "/api/v1/trades",
      "/api/v2/track-record",
      "/api/track-record",
    ];
    for (const p of guesses) {
      for (const headers of [{}, { "x-api-key": apiKey }]) {
        const res = await fetch(`${server.baseUrl}${p}`, { headers });
        expect(res.status, p).toBe(404);
        expect(await res.json()).toMatchObject({ ok: false, error: "not_found" });
      }
    }
    for (const service of ["signals.v1.SignalsService", "signals.v1.MarketDataService"]) {
      for (const rpc of [
        "GetTrackRecord",
        "GetHistory",
        "GetSignalHistory",
        "GetWinRates",
        "GetBacktest",
        "ListSignals",
      ]) {
        const res = await fetch(`${server.baseUrl}/${service}/${rpc}`, {
          method: "POST",
          headers: { "content-type": "application/json", "connect-protocol-version": "1", "x-api-key": apiKey },
          body: "{}",
        });
        expect(res.status, `${service}/${rpc}`).toBe(404);
        await res.arrayBuffer();
      }
    }
  });

  it(
    "the chart pages (where the track record lives) do not accept an " +
      "API key: without a session they send the browser to sign in",
    async () => {
      for (const p of ["/charts/ZZB?tf=1h", "/charts/ZZB", "/charts"]) {
        const res = await fetch(`${server.baseUrl}${p}`, {
          headers: { "x-api-key": apiKey, accept: "application/json" },
          redirect: "manual",
        });
        const text = await res.text();
        expect(res.status, p).toBe(303);
        expect(res.headers.get("location"), p).toMatch(/^\/signin/);
        expect(text).not.toMatch(/win rate|backtest/i);
      }
    },
  );
});
