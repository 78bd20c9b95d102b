/**
 * Silent coercions are told: `tf=2h`, `tf=1H`, a misspelt parameter (`symbol=ETH`), symbols
 * beyond the eighth, duplicates and pair names stay 200 and charged as the contract says, and
 * the answer carries `x-signals-warnings` naming each, on REST, Connect and gRPC (response
 * metadata); a clean call carries none, an error carries none, and the REST answers validate
 * against the OpenAPI document (which documents the header).
 */

import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MarketDataService } from "../../gen/signals/v1/market_data_pb.js";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { normaliseSymbols, normaliseTimeframe, readSignalsRequest } from "../../src/signals/request.ts";
import { quoted } from "../../src/signals/warnings.ts";
import { type ApiAnswer, apiRequest } from "../support/api-request.ts";
import { fixedSnapshot, SAMPLE_READINGS } from "../support/fixed-snapshot.ts";
import { openApiDocument } from "../support/openapi-contract.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

let server: TestServer;
let apiKey: string;
const TWELVE = "BTC,ETH,SOL,BNB,XRP,ADA,DOGE,LINK,LTC,DOT,AVAX,TRX";

beforeAll(async () => {
  server = await startTestServer({ snapshot: fixedSnapshot(SAMPLE_READINGS, ["BNB", "XRP"]) });
  ({ apiKey } = await server.account());
});
afterAll(() => server?.close());

/** A REST call, checked against the OpenAPI document. */
const rest = (query: string, headers: Record<string, string> = { "x-api-key": apiKey }, path = "/api/v1/signals") =>
  apiRequest(server.baseUrl, `${path}${query}`, { headers, contract: true });
const warningsOf = (answer: ApiAnswer) => answer.headers.get("x-signals-warnings");

describe("x-signals-warnings on REST", () => {
  it("names every coercion, in the order of the request, and the call is still 200 and charged once", async () => {
    const before = (await rest("?symbols=BTC&tf=1h")).body.credits_left as number;
    const cases: Array<[string, string | null]> = [
      ["?symbols=BTC&tf=1h", null],
      [
        `?tf=2h&symbol=ETH&symbols=${TWELVE}`,
        'tf "2h" is not offered, 4h used; parameter "symbol" ignored; 4 symbols beyond 8 ignored',
      ],
      ["?symbols=BTC&tf=1H", 'tf "1H" is not offered, 4h used'],
      ["?symbol=ETH", 'parameter "symbol" ignored'],
      [
        "?symbols=BTCUSDT,ETH/USDT,SOL&tf=1h",
        '"BTCUSDT" looks like a pair name; symbols are base codes such as "BTC"; ' +
          '"ETH/USDT" looks like a pair name; symbols are base codes such as "ETH"',
      ],
      ["?symbols=btc,BTC,eth,ETH&tf=1h", 'duplicate symbol "BTC" ignored; duplicate symbol "ETH" ignored'],
      ["?symbols=BTC&tf=1h&tf=4h", 'tf "1h,4h" is not offered, 4h used'],
      ["?symbols=BTC,,ETH,&tf=", null],
    ];
    let charged = 0;
    for (const [query, expected] of cases) {
      const answer = await rest(query);
      expect(answer.status, query).toBe(200);
      expect(warningsOf(answer), query).toBe(expected);
      charged++;
      expect(answer.body.credits_left, query).toBe(before - charged);
    }
    // What the contract says is unchanged: 8 symbols kept, 4h served, the pair refused.
    const coerced = await rest(`?tf=2h&symbol=ETH&symbols=${TWELVE}`);
    expect(coerced.body.tf).toBe("4h");
    expect(coerced.body.signals.map((s: { symbol: string }) => s.symbol)).toEqual(TWELVE.split(",").slice(0, 8));
    expect((await rest("?symbols=BTCUSDT&tf=1h")).body.signals).toEqual([
      { symbol: "BTCUSDT", tf: "1h", ok: false, reason: "unknown_symbol" },
    ]);
  });

  it("a refused call carries no warnings; input that is not printable ASCII is escaped", async () => {
    const refused = await rest("?tf=2h&symbol=ETH", {});
    expect(refused.status).toBe(401);
    expect(warningsOf(refused)).toBeNull();
    const odd = await rest(`?tf=${encodeURIComponent(`é"\n${"x".repeat(40)}`)}&${encodeURIComponent("sym\u00e9")}=1`);
    expect(odd.status).toBe(200);
    expect(warningsOf(odd)).toBe(
      `tf "\\u00e9\\"\\u000a${"x".repeat(29)}..." is not offered, 4h used; parameter "sym\\u00e9" ignored`,
    );
  });

  it("the free endpoints name unknown parameters too, and movers its tf fallback", async () => {
    expect(warningsOf(await rest("?tf=2h&limit=3&lmit=4", { "x-api-key": apiKey }, "/api/v1/movers"))).toBe(
      'tf "2h" is not offered, 4h used; parameter "lmit" ignored',
    );
    expect(warningsOf(await rest("?symbols=BTC", { "x-api-key": apiKey }, "/api/v1/news"))).toBeNull();
    expect(warningsOf(await rest("?symbol=BTC", { "x-api-key": apiKey }, "/api/v1/news"))).toBe(
      'parameter "symbol" ignored',
    );
  });

  it("the OpenAPI document describes the header on every 200", () => {
    const doc = openApiDocument();
    for (const [path, item] of Object.entries(doc.paths as Record<string, any>))
      expect(item.get.responses["200"].headers["X-Signals-Warnings"], path).toEqual({
        $ref: "#/components/headers/X-Signals-Warnings",
      });
    expect(doc.components.headers["X-Signals-Warnings"].description).toContain("4 symbols beyond 8 ignored");
  });
});

describe("x-signals-warnings over Connect and gRPC (response metadata)", () => {
  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: server.baseUrl })],
  ] as const) {
    it(`${name}: the same warnings as REST (no REST-only parameter names), none on a clean call`, async () => {
      const client = createClient(SignalsService, transport());
      let warnings: string | null | undefined;
      const res = await client.getSignals(
        { symbols: `${TWELVE},BTCUSDT`, tf: "2h" },
        { headers: { "x-api-key": apiKey }, onHeader: (h) => (warnings = h.get("x-signals-warnings")) },
      );
      expect(res.tf).toBe("4h");
      expect(warnings).toBe('tf "2h" is not offered, 4h used; 5 symbols beyond 8 ignored');
      await client.getSignals(
        { symbols: "BTCUSDT", tf: "1h" },
        { headers: { "x-api-key": apiKey }, onHeader: (h) => (warnings = h.get("x-signals-warnings")) },
      );
      expect(warnings).toBe('"BTCUSDT" looks like a pair name; symbols are base codes such as "BTC"');
      await client.getSignals(
        { symbols: "BTC", tf: "1h" },
        { headers: { "x-api-key": apiKey }, onHeader: (h) => (warnings = h.get("x-signals-warnings")) },
      );
      expect(warnings).toBeNull();
      const movers = createClient(MarketDataService, transport());
      await movers.getMovers(
        { tf: "1H" },
        { headers: { "x-api-key": apiKey }, onHeader: (h) => (warnings = h.get("x-signals-warnings")) },
      );
      expect(warnings).toBe('tf "1H" is not offered, 4h used');
    });
  }
});

describe("readSignalsRequest", () => {
  it(
    "serves exactly what normaliseSymbols and normaliseTimeframe " + "serve, and builds no warning for a clean request",
    () => {
      const inputs = [
        undefined,
        "",
        " , ,",
        "btc",
        "BTC,ETH",
        "a,b,c,d,e,f,g,h,i,j",
        "a,a,b,b,c,d,e,f,g,h,i",
        " btc, eth,,BTC , sol ,eth",
      ];
      for (const symbols of inputs) {
        for (const tf of [undefined, "", "1h", "1H", "2h", "4h "]) {
          const read = readSignalsRequest(symbols, tf, 8);
          expect(read.symbols).toEqual(normaliseSymbols(symbols, 8));
          expect(read.tf).toBe(normaliseTimeframe(tf));
        }
      }
      expect(readSignalsRequest("BTC,ETH,SOL", "1h", 8)).toEqual({
        tf: "1h",
        symbols: ["BTC", "ETH", "SOL"],
        tfWarning: null,
        symbolWarnings: null,
      });
      expect(readSignalsRequest("a,a,b,b,c,c,d,d,e", "4h", 8).symbolWarnings).toEqual([
        'duplicate symbol "A" ignored',
        'duplicate symbol "B" ignored',
        'duplicate symbol "C" ignored',
        "1 more duplicate symbols ignored",
      ]);
      expect(quoted("ok")).toBe('"ok"');
    },
  );
});
