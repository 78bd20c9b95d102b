/**
 * Dataset ingest end to end: real gRPC clients stream rows to DataIngestService on the internal
 * port (bearer token), the free endpoints serve what was stored. Counts, reasons (capped list,
 * complete counts) and duplicates come back; a snapshot row is replaced only by a later one; a
 * stream that fails or is too long stores nothing; no token, a wrong token or the public port
 * store nothing. Finally `signals data import` on JSON lines (and .gz), on both databases.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataIngestService } from "../../gen/signals/v1/data_ingest_pb.js";
import { openDb } from "../../src/db/client.ts";
import { MAX_STREAM_ROWS } from "../../src/market-data/datasets.ts";
import { readNews } from "../../src/market-data/store.ts";
import { apiJson } from "../support/api-request.ts";
import { childEnv, runCli } from "../support/processes.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

const H = 3_600_000;
let server: TestServer;
let apiKey: string;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  server = await startTestServer({ env: { FREE_RATE_LIMIT: "100000" } });
  ({ apiKey } = await server.account());
});
afterAll(async () => {
  for (const s of sessions) s.abort();
  await server?.close();
});

function ingest(
  authorization: string | null = `Bearer ${INTERNAL_TOKEN}`,
  baseUrl = server.internalUrl,
): Client<typeof DataIngestService> {
  const auth: Interceptor = (next) => (req) => {
    if (authorization !== null) req.header.set("authorization", authorization);
    return next(req);
  };
  const sessionManager = new Http2SessionManager(baseUrl);
  sessions.push(sessionManager);
  return createClient(DataIngestService, createGrpcTransport({ baseUrl, sessionManager, interceptors: [auth] }));
}

async function* stream<T>(rows: T[]): AsyncGenerator<T> {
  for (const row of rows) yield row;
}

type Summary = {
  accepted: bigint;
  rejected: bigint;
  duplicates: bigint;
  rejections: Array<{ index: bigint; key: string; reason: string }>;
  reasons: { [k: string]: bigint };
};
const plain = (r: Summary) => ({
  accepted: Number(r.accepted),
  rejected: Number(r.rejected),
  duplicates: Number(r.duplicates),
  rejections: r.rejections.map((x) => ({ index: Number(x.index), key: x.key, reason: x.reason })),
  reasons: Object.fromEntries(Object.entries(r.reasons).map(([k, v]) => [k, Number(v)])),
});

describe("DataIngestService over gRPC on the internal port", () => {
  it(
    "news: bad items rejected with index, key and reason; the " + "rest stored and served; a resend is all duplicates",
    async () => {
      const now = server.clock();
      const t = (h: number) => BigInt(now - h * H);
      const items = [
        { id: "a", time: t(3), title: "First", source: "Wire", url: "https://example.com/a", coins: ["btc"] },
        { id: "b", time: t(2), title: "", source: "Wire", url: "https://example.com/b", coins: [] }, // invalid_title
        { id: "c", time: t(1), title: "Third", source: "Wire", url: "mailto:x@example.com", coins: [] }, // invalid_url
        // future_time
        { id: "d", time: BigInt(now + H), title: "Future", source: "Wire", url: "https://example.com/d", coins: [] },
        // duplicate in the stream
        { id: "a", time: t(1), title: "Same id again", source: "Wire", url: "https://example.com/a2", coins: [] },
        // invalid_symbol
        { id: "e", time: t(1), title: "Fifth", source: "Wire", url: "https://example.com/e", coins: ["ETH", "B-D"] },
        { id: "f", time: t(0), title: "Sixth", source: "Wire", url: "https://example.com/f", coins: ["ETH"] },
      ];
      const first = plain(await ingest().pushNews(stream(items)));
      expect(first).toEqual({
        accepted: 2,
        rejected: 4,
        duplicates: 1,
        rejections: [
          { index: 1, key: "b", reason: "invalid_title" },
          { index: 2, key: "c", reason: "invalid_url" },
          { index: 3, key: "d", reason: "future_time" },
          { index: 5, key: "e", reason: "invalid_symbol" },
        ],
        reasons: { invalid_title: 1, invalid_url: 1, future_time: 1, invalid_symbol: 1 },
      });
      const served = await apiJson(server.baseUrl, "/api/v1/news", apiKey);
      expect(served.items.map((i: { id: string; title: string; coins: string[] }) => [i.id, i.title, i.coins])).toEqual(
        [
          ["f", "Sixth", ["ETH"]],
          ["a", "First", ["BTC"]],
        ],
      );
      expect(served.items[0].updated_at).toBe(now);
      const again = plain(await ingest().pushNews(stream(items)));
      expect({ accepted: again.accepted, duplicates: again.duplicates, rejected: again.rejected }).toEqual({
        accepted: 0,
        duplicates: 3,
        rejected: 4,
      });
    },
  );

  it(
    "derivatives and fundamentals: a later time replaces the " + "stored row, an earlier or equal one is a duplicate",
    async () => {
      const now = server.clock();
      const d = (time: number, fundingRate: number) => ({
        symbol: "btc",
        venue: "okx",
        time: BigInt(time),
        fundingRate,
      });
      expect(
        plain(
          await ingest().pushDerivatives(
            stream([d(now - 2 * H, 0.1), { symbol: "ETH", venue: "okx", time: BigInt(now), openInterestUsd: -1 }]),
          ),
        ),
      ).toMatchObject({
        accepted: 1,
        rejected: 1,
        rejections: [{ index: 1, key: "ETH", reason: "negative_open_interest" }],
      });
      server.clock.advance(1000);
      // Older than stored, equal to stored, then newer twice in one stream (the latest wins).
      const res = plain(
        await ingest().pushDerivatives(
          stream([d(now - 3 * H, 0.2), d(now - 2 * H, 0.3), d(now - H, 0.5), d(now - 1.5 * H, 0.4)]),
        ),
      );
      expect({ accepted: res.accepted, duplicates: res.duplicates, rejected: res.rejected }).toEqual({
        accepted: 1,
        duplicates: 3,
        rejected: 0,
      });
      expect((await apiJson(server.baseUrl, "/api/v1/derivatives?symbols=BTC", apiKey)).rows).toEqual([
        {
          symbol: "BTC",
          venue: "okx",
          funding_rate: 0.5,
          open_interest_usd: null,
          long_short_ratio: null,
          time: now - H,
          updated_at: now + 1000,
        },
      ]);
      const f = (time: number, cap: number) => ({
        symbol: "SOL",
        time: BigInt(time),
        circulatingSupply: 5e8,
        marketCapUsd: cap,
        source: "src",
      });
      expect(
        plain(
          await ingest().pushFundamentals(stream([f(now - H, 1), f(now - 2 * H, 2), { ...f(now, 3), maxSupply: 1 }])),
        ),
      ).toMatchObject({
        accepted: 1,
        duplicates: 1,
        rejected: 1,
        rejections: [{ index: 2, key: "SOL", reason: "supply_above_max" }],
      });
      expect((await apiJson(server.baseUrl, "/api/v1/fundamentals?symbols=SOL", apiKey)).rows).toMatchObject([
        { symbol: "SOL", market_cap_usd: 1, time: now - H, max_supply: null, rank: null },
      ]);
    },
  );

  it(
    "macro: reports the first 100 rejections and counts every reason; " +
      "a changed value is a revision that replaces the point",
    async () => {
      const now = server.clock();
      const good = Array.from({ length: 5 }, (_, i) => ({
        series: "Rate",
        time: BigInt(now - (i + 1) * 24 * H),
        value: 4 + i / 10,
        unit: "%",
        source: "CB",
      }));
      const bad = Array.from({ length: 130 }, (_, i) =>
        i % 2 ? { ...good[0]!, unit: "" } : { ...good[0]!, value: Number.NaN },
      );
      const res = plain(await ingest().pushMacro(stream([...good, ...bad])));
      expect({
        accepted: res.accepted,
        rejected: res.rejected,
        reported: res.rejections.length,
        reasons: res.reasons,
      }).toEqual({
        accepted: 5,
        rejected: 130,
        reported: 100,
        reasons: { non_finite_value: 65, invalid_unit: 65 },
      });
      expect(res.rejections[0]).toEqual({ index: 5, key: "Rate", reason: "non_finite_value" });
      const same = plain(await ingest().pushMacro(stream([good[0]!])));
      expect([same.accepted, same.duplicates]).toEqual([0, 1]);
      const revised = plain(await ingest().pushMacro(stream([{ ...good[0]!, value: 99 }])));
      expect([revised.accepted, revised.duplicates]).toEqual([1, 0]);
      const points = (await apiJson(server.baseUrl, "/api/v1/macro?series=Rate", apiKey)).points;
      expect(points.map((p: { value: number }) => p.value)).toEqual([99, 4.1, 4.2, 4.3, 4.4]);
    },
  );

  it("a stream that fails part-way stores nothing, also its valid rows", async () => {
    const now = server.clock();
    async function* failing() {
      for (let i = 0; i < 50; i++)
        yield {
          id: `broken-${i}`,
          time: BigInt(now - H),
          title: "t",
          source: "s",
          url: "https://example.com/x",
          coins: [],
        };
      throw new Error("feeder crashed");
    }
    await expect(ingest().pushNews(failing())).rejects.toBeInstanceOf(ConnectError);
    const stored = await readNews(server.db.handle, { symbols: [], since: null, before: null, limit: 1000 });
    expect(stored.rows.filter((r) => r.id.startsWith("broken-"))).toEqual([]);
  });

  it(`a stream of more than ${MAX_STREAM_ROWS} rows fails RESOURCE_EXHAUSTED and stores nothing`, async () => {
    const now = server.clock();
    async function* many() {
      for (let i = 0; i <= MAX_STREAM_ROWS; i++)
        yield { series: "Too many", time: BigInt(now - (i + 1) * 60_000), value: i, unit: "u", source: "s" };
    }
    const err = await ingest()
      .pushMacro(many())
      .then(
        () => null,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.ResourceExhausted);
    expect((await apiJson(server.baseUrl, "/api/v1/macro?series=Too%20many", apiKey)).points).toEqual([]);
  });

  it("no token, a wrong token or the public port: refused, nothing stored", async () => {
    const row = { symbol: "ZZQ", time: BigInt(server.clock()), circulatingSupply: 1, marketCapUsd: 1, source: "s" };
    for (const authorization of [null, "Bearer wrong-token-0123456789abcdef", INTERNAL_TOKEN]) {
      const err = await ingest(authorization)
        .pushFundamentals(stream([row]))
        .then(
          () => null,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code).toBe(Code.Unauthenticated);
    }
    const onPublic = await ingest(`Bearer ${INTERNAL_TOKEN}`, server.baseUrl)
      .pushFundamentals(stream([row]))
      .then(
        () => null,
        (e: unknown) => ConnectError.from(e),
      );
    expect(onPublic).toBeInstanceOf(ConnectError);
    expect((await apiJson(server.baseUrl, "/api/v1/fundamentals?symbols=ZZQ", apiKey)).rows).toEqual([]);
  });
});

describe(`signals data import (${usingPostgres ? "Postgres" : "embedded PGlite"})`, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let databaseUrl: string | null = null;
  let dropDatabase: (() => Promise<void>) | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "signals-data-import-"));
    if (usingPostgres) {
      const database = await createPostgresDatabase();
      databaseUrl = database.url;
      dropDatabase = database.drop;
      env = childEnv({ DATABASE_URL: database.url });
    } else {
      env = childEnv({ DATA_DIR: path.join(dir, "data") });
    }
  });
  afterAll(async () => {
    await dropDatabase?.();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(
    "imports JSON lines with bad rows rejected by line and " + "reason, .gz too, and a second run is all duplicates",
    async () => {
      const lines = [
        JSON.stringify({
          id: "x-1",
          time: "2026-01-02T03:04:05Z",
          title: "One",
          source: "Wire",
          url: "https://example.com/1",
          coins: ["btc", "eth"],
        }),
        "",
        "{broken json",
        JSON.stringify({ id: "x-2", time: 1767236645000, title: "Two", source: "Wire", url: "https://example.com/2" }),
        JSON.stringify({
          id: "x-3",
          time: "2026-01-02T03:04:05Z",
          title: "Three",
          source: "Wire",
          url: "https://example.com/3",
          coin: ["BTC"],
        }),
        JSON.stringify({ id: "x-4", time: "not a time", title: "Four", source: "Wire", url: "https://example.com/4" }),
        JSON.stringify({ id: "x-5", time: 1767236645000, title: "Five", source: "Wire", url: "ftp://example.com/5" }),
        JSON.stringify({ id: "x-6", time: 1767236645000, title: 6, source: "Wire", url: "https://example.com/6" }),
      ];
      const file = path.join(dir, "news.jsonl");
      writeFileSync(file, `${lines.join("\n")}\n`);
      const first = await runCli(["data", "import", "--dataset", "news", "--file", file, "--json"], env);
      expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(first.stdout)).toEqual({
        ok: true,
        dataset: "news",
        file,
        accepted: 2,
        rejected: 5,
        duplicates: 0,
        rejections: [
          { index: 1, line: 3, key: "", reason: "invalid_json" },
          { index: 3, line: 5, key: "x-3", reason: "unknown_field" },
          { index: 4, line: 6, key: "x-4", reason: "invalid_time" },
          { index: 5, line: 7, key: "x-5", reason: "invalid_url" },
          { index: 6, line: 8, key: "x-6", reason: "wrong_type" },
        ],
        reasons: { invalid_json: 1, unknown_field: 1, wrong_type: 1, invalid_time: 1, invalid_url: 1 },
      });

      const gz = path.join(dir, "macro.jsonl.gz");
      const points = [0, 1, 2].map((k) =>
        JSON.stringify({ series: "GZ series", time: Date.UTC(2025, k, 1), value: k + 0.5, unit: "%", source: "test" }),
      );
      writeFileSync(gz, gzipSync(points.join("\n")));
      const second = await runCli(["data", "import", "--dataset", "macro", "--file", gz], env);
      expect({ code: second.code, stdout: second.stdout }).toEqual({
        code: 0,
        stdout: "macro: accepted 3, rejected 0, duplicates 0\n",
      });
      const again = await runCli(["data", "import", "--dataset", "macro", "--file", gz, "--json"], env);
      expect(JSON.parse(again.stdout)).toMatchObject({ accepted: 0, duplicates: 3, rejected: 0 });

      const handle = await openDb({ databaseUrl, dataDir: path.join(dir, "data") });
      try {
        const stored = await readNews(handle, { symbols: [], since: null, before: null, limit: 10 });
        expect(stored.rows.map((r) => [r.id, r.time, r.coins])).toEqual([
          ["x-1", Date.parse("2026-01-02T03:04:05Z"), ["BTC", "ETH"]],
          ["x-2", 1767236645000, []],
        ]);
      } finally {
        await handle.close();
      }
    },
  );

  it("refuses an unknown dataset or a missing file with a usage error", async () => {
    const bad = await runCli(["data", "import", "--dataset", "candles", "--file", "x", "--json"], env);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, error: "usage" });
    const missing = await runCli(["data", "import", "--dataset", "news", "--file", path.join(dir, "nope.jsonl")], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/does not exist/);
  });
});
