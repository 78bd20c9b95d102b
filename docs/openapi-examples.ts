/**
 * The OpenAPI document's examples, recorded from a real server: src/server/openapi-examples.json
 * holds, for every operation and every status it documents, one answer per error code, exactly
 * as the server sent it. The server runs the production factory over a fresh database on a
 * fixed clock, with the real Binance 1h candles of ../shared/data (BTC, ETH, SOL: the last 25
 * days up to 2024-06-16 12:00 UTC, the last one forming) and free-endpoint rows stored through
 * the feeders' push path; each status is provoked the way a caller meets it (no key, an expired
 * subscription, an empty balance, the daily cap, a body too large, the database gone…).
 *
 * Run: npm run docs:examples   (needs ../shared/data; writes the JSON file)
 * test/e2e/openapi-examples.test.ts records again and requires the same file, so the examples
 * cannot drift from what the server answers.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { regenerateKey, setSubscription } from "../src/accounts/accounts.ts";
import { adjustTokens } from "../src/billing/tokens.ts";
import { mytDay } from "../src/clock.ts";
import { pushDataset } from "../src/market-data/ingest-service.ts";
import type { OpenApiExamples } from "../src/server/openapi.ts";
import { ERROR_TABLES, type OperationKind } from "../src/server/openapi.ts";
import { PUBLIC_REST_SERVICES } from "../src/server/public-api.ts";
import { httpRouteOf } from "../src/server/rest.ts";
import { rawHttp1 } from "../test/support/raw-http.ts";
import { loadRealCandles, realCandlesAvailable } from "../test/support/real-candles.ts";
import { createTestDb } from "../test/support/test-db.ts";
import { createTestClock, startTestServer, type TestServer } from "../test/support/test-server.ts";

export const EXAMPLES_FILE = fileURLToPath(new URL("../src/server/openapi-examples.json", import.meta.url));

const H = 3_600_000;
/** The last real candle's open (2024-06-16 12:00 UTC): it is the forming one. */
const FORMING_OPEN = Date.parse("2024-06-16T12:00:00Z");
/** The server's clock: 37 minutes into that candle. */
const NOW = FORMING_OPEN + 37 * 60_000 + 12_345;
const COINS = ["BTC", "ETH", "SOL"] as const;
const HISTORY_HOURS = 25 * 24;

/** The request behind each 200 example, per path (the README's and the code samples' queries). */
const OK_QUERIES: Record<string, string> = {
  "/api/v1/signals": "?symbols=BTC,ETH&tf=1h",
  "/api/v1/movers": "?tf=1h&limit=3",
  "/api/v1/derivatives": "?symbols=BTC,ETH",
  "/api/v1/news": "?symbols=BTC&limit=2",
  "/api/v1/macro": "?series=DFF&limit=3",
  "/api/v1/fundamentals": "?symbols=BTC,ETH",
  "/api/v1/usage": "",
};

/** Free-endpoint rows in their sources' shapes (figures of mid-June 2024; links to example.com). */
async function storeDatasets(server: TestServer): Promise<void> {
  const deps = { db: server.db.handle, clock: server.clock, logger: pino({ level: "silent" }) };
  const minute = (m: number) => NOW - m * 60_000;
  const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`);
  const rows = {
    derivatives: [
      {
        symbol: "BTC",
        venue: "binance",
        time: minute(7),
        fundingRate: 0.0000876,
        openInterestUsd: 7_912_384_512.4,
        longShortRatio: 1.4213,
      },
      {
        symbol: "ETH",
        venue: "binance",
        time: minute(7),
        fundingRate: 0.0001,
        openInterestUsd: 4_018_227_310.9,
        longShortRatio: 2.0417,
      },
      {
        symbol: "SOL",
        venue: "binance",
        time: minute(7),
        fundingRate: 0.0000412,
        openInterestUsd: 1_502_331_904.2,
        longShortRatio: 2.6833,
      },
    ],
    news: [
      {
        id: "example-wire-20240616-0930",
        time: Date.parse("2024-06-16T09:30:00Z"),
        title: "Bitcoin holds above $66,000 as weekend volumes thin",
        source: "Example Wire",
        url: "https://example.com/markets/2024/06/16/bitcoin-weekend",
        coins: ["BTC"],
      },
      {
        id: "example-wire-20240616-0415",
        time: Date.parse("2024-06-16T04:15:00Z"),
        title: "Ether and Solana trail bitcoin after the Fed holds rates",
        source: "Example Wire",
        url: "https://example.com/markets/2024/06/16/ether-solana",
        coins: ["ETH", "SOL", "BTC"],
      },
      {
        id: "example-wire-20240615-1800",
        time: Date.parse("2024-06-15T18:00:00Z"),
        title: "Spot bitcoin funds see a fourth day of outflows",
        source: "Example Wire",
        url: "https://example.com/markets/2024/06/15/etf-flows",
        coins: ["BTC"],
      },
    ],
    macro: [
      { series: "DFF", time: day("2024-06-13"), value: 5.33, unit: "Percent", source: "FRED" },
      { series: "DFF", time: day("2024-06-12"), value: 5.33, unit: "Percent", source: "FRED" },
      { series: "DFF", time: day("2024-06-11"), value: 5.33, unit: "Percent", source: "FRED" },
      { series: "DFF", time: day("2024-06-10"), value: 5.33, unit: "Percent", source: "FRED" },
      { series: "DGS10", time: day("2024-06-14"), value: 4.2, unit: "Percent", source: "FRED" },
    ],
    fundamentals: [
      {
        symbol: "BTC",
        time: minute(12),
        circulatingSupply: 19_711_362,
        maxSupply: 21_000_000,
        totalSupply: 21_000_000,
        marketCapUsd: 1_311_453_002_124,
        fullyDilutedValuationUsd: 1_397_216_121_036,
        rank: 1,
        athUsd: 73_738,
        athTime: Date.parse("2024-03-14T07:10:36.635Z"),
        source: "coingecko",
      },
      {
        symbol: "ETH",
        time: minute(12),
        circulatingSupply: 120_164_438.6,
        totalSupply: 120_164_438.6,
        marketCapUsd: 430_228_519_867,
        fullyDilutedValuationUsd: 430_228_519_867,
        rank: 2,
        athUsd: 4_878.26,
        athTime: Date.parse("2021-11-10T14:24:19.604Z"),
        source: "coingecko",
      },
    ],
  };
  for (const dataset of ["derivatives", "news", "macro", "fundamentals"] as const) {
    const summary = await pushDataset(deps, dataset, rows[dataset] as never);
    if (summary.rejected > 0) throw new Error(`${dataset} rows rejected: ${JSON.stringify(summary.rejections)}`);
  }
}

/** Records every example; needs the shared real candles. */
export async function recordOpenApiExamples(): Promise<OpenApiExamples> {
  if (!realCandlesAvailable) throw new Error("the real candles of ../shared/data are needed");
  const db = await createTestDb();
  const clock = createTestClock(NOW);
  const server = await startTestServer({
    db,
    feed: true,
    clock,
    // CHARGE_RESOLVE_MS: the last calls, made with the database closed, get their 503 this soon.
    env: { HEADERS_TIMEOUT: "1", REQUEST_TIMEOUT: "2", FAILED_KEY_LIMIT: "100000", CHARGE_RESOLVE_MS: "200" },
  });
  const examples: OpenApiExamples = {};
  const note = (path: string, status: number, name: string, summary: string, value: unknown) => {
    const byStatus = (examples[path] ??= {});
    const byName = (byStatus[String(status)] ??= {});
    byName[name] ??= { summary, value };
  };
  try {
    const updates = COINS.flatMap((symbol) =>
      loadRealCandles(symbol)!
        .filter((c) => c.openTime > FORMING_OPEN - HISTORY_HOURS * H && c.openTime <= FORMING_OPEN)
        .map((c) => ({ symbol, tf: "1h", ...c, closed: c.openTime < FORMING_OPEN })),
    );
    // The history arrives just before now, as a feeder's would; the forming candle at now.
    clock.set(NOW - 60_000);
    await server.feed!.ingest(
      updates.filter((u) => u.closed),
      { alerts: false },
    );
    clock.set(NOW);
    await server.feed!.ingest(
      updates.filter((u) => !u.closed),
      { alerts: false },
    );
    await storeDatasets(server);

    const key = async (input: { plan?: string } = {}) => (await server.account(input)).apiKey;
    const call = async (
      path: string,
      init: { method?: string; headers?: Record<string, string>; query?: string } = {},
    ) => {
      const res = await fetch(`${server.baseUrl}${path}${init.query ?? ""}`, {
        method: init.method ?? "GET",
        headers: init.headers ?? {},
      });
      return { status: res.status, body: JSON.parse(await res.text()) as Record<string, unknown> };
    };
    const record = async (path: string, summary: string, init: Parameters<typeof call>[1]) => {
      const { status, body } = await call(path, init);
      note(path, status, status === 200 ? "ok" : String(body.error), summary, body);
      return status;
    };
    const raw = async (path: string, summary: string, head: string) => {
      const answer = await rawHttp1(server.port, [head]);
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      note(path, answer.status!, String(body.error), summary, body);
    };

    const ops = PUBLIC_REST_SERVICES.flatMap(({ service, kind }) =>
      service.methods
        .map((m) => ({ path: httpRouteOf(m)?.path, kind }))
        .filter((o): o is { path: string; kind: OperationKind } => o.path !== undefined),
    );
    for (const { path, kind } of ops) {
      const ok = OK_QUERIES[path] ?? "";
      await record(path, `GET ${path}${ok}`, { query: ok, headers: { "x-api-key": await key() } });
      if (kind === "paid") {
        await record(path, "an Idempotency-Key of 300 characters", {
          query: ok,
          headers: { "x-api-key": await key(), "idempotency-key": "x".repeat(300) },
        });
        const idem = await key();
        await call(path, {
          query: "?symbols=BTC&tf=1h",
          headers: { "x-api-key": idem, "idempotency-key": "order-7f9c2d1e" },
        });
        await record(path, "the same Idempotency-Key again, for other symbols", {
          query: "?symbols=ETH&tf=1h",
          headers: { "x-api-key": idem, "idempotency-key": "order-7f9c2d1e" },
        });
        await record(path, "a key on the basic plan", {
          query: ok,
          headers: { "x-api-key": await key({ plan: "basic" }) },
        });
        const drained = await server.account();
        await adjustTokens(
          server.db.handle,
          drained.accountId,
          "adjustment",
          -server.config.limits.monthlyGrant,
          "example: empty balance",
          server.config.limits,
        );
        await record(path, "grant and packs both empty", { query: ok, headers: { "x-api-key": drained.apiKey } });
        const capped = await server.account();
        await server.db.handle.rows(
          sql`UPDATE accounts SET usage_day = ${mytDay(NOW)}, calls_today = ${server.config.limits.dailyCap}
            WHERE id = ${capped.accountId}`,
        );
        await record(path, "the daily cap of charged calls reached", {
          query: ok,
          headers: { "x-api-key": capped.apiKey },
        });
      } else {
        if (kind === "free")
          await record(path, "a limit that is not a whole number", {
            query: "?limit=ten",
            headers: { "x-api-key": await key() },
          });
        const busy = await key();
        for (let i = 0; i <= server.config.freeRateLimit; i++)
          if ((await call(path, { query: ok, headers: { "x-api-key": busy } })).status === 429) break;
        await record(path, "the key's free calls of the minute used up", { query: ok, headers: { "x-api-key": busy } });
      }
      await record(path, "no x-api-key header", { query: ok });
      const regenerated = await server.account();
      await regenerateKey(server.db.handle, regenerated.accountId, NOW);
      await record(path, "a key that was regenerated", { query: ok, headers: { "x-api-key": regenerated.apiKey } });
      const expired = await server.account();
      await setSubscription(server.db.handle, expired.accountId, new Date(NOW - 1), NOW);
      await record(path, "a subscription that has ended", { query: ok, headers: { "x-api-key": expired.apiKey } });
      await record(path, "POST instead of GET", { method: "POST", query: ok, headers: { "x-api-key": await key() } });
      await record(path, "a query string of 20,000 characters", {
        query: `?symbols=${"A".repeat(20_000)}`,
        headers: { "x-api-key": await key() },
      });
      await raw(
        path,
        "a header block over 16 KiB",
        `GET ${path} HTTP/1.1\r\nHost: api.example\r\nx-pad: ${"p".repeat(20_000)}\r\n\r\n`,
      );
      await raw(
        path,
        "a declared body over 64 KiB",
        `GET ${path} HTTP/1.1\r\nHost: api.example\r\nContent-Length: 100000\r\n\r\n`,
      );
      await raw(
        path,
        "a request that is not valid HTTP",
        `GET ${path} HTTP/1.1\r\nHost: api.example\r\nBad Header: y\r\n\r\n`,
      );
    }
    // Header blocks that never end, all at once (each waits HEADERS_TIMEOUT).
    await Promise.all(
      ops.map(({ path }) =>
        raw(path, "the header block did not arrive in time", `GET ${path} HTTP/1.1\r\nHost: api.example\r\n`),
      ),
    );
    // The database goes away: 503, nothing charged.
    const keys = await Promise.all(ops.map(() => key()));
    await db.handle.close();
    for (const [i, { path }] of ops.entries())
      await record(path, "the database cannot be reached", {
        query: OK_QUERIES[path] ?? "",
        headers: { "x-api-key": keys[i]! },
      });
    for (const { path, kind } of ops) {
      const wanted = ["200", ...Object.keys(ERROR_TABLES[kind])];
      const missing = wanted.filter((status) => !examples[path]?.[status]);
      if (missing.length > 0) throw new Error(`${path}: no example for ${missing.join(", ")}`);
    }
    return sortExamples(examples);
  } finally {
    await server.close();
    await db.drop().catch(() => {});
  }
}

/** Paths, statuses and names in a stable order, so the file diffs cleanly. */
function sortExamples(examples: OpenApiExamples): OpenApiExamples {
  const sorted: OpenApiExamples = {};
  for (const path of Object.keys(examples).sort()) {
    sorted[path] = {};
    for (const status of Object.keys(examples[path]!).sort()) {
      sorted[path]![status] = {};
      for (const name of Object.keys(examples[path]![status]!).sort())
        sorted[path]![status]![name] = examples[path]![status]![name]!;
    }
  }
  return sorted;
}

/** The file's text for these examples. */
export function examplesFileText(examples: OpenApiExamples): string {
  return `${JSON.stringify(examples, null, 2)}\n`;
}

if (import.meta.main) {
  writeFileSync(EXAMPLES_FILE, examplesFileText(await recordOpenApiExamples()));
  process.stdout.write(`OpenAPI examples recorded: ${EXAMPLES_FILE}\n`);
}
