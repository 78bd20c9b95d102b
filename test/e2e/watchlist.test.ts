/**
 * The live watchlist (/watch) with two server processes' worth of servers on one database: a
 * lead (the engine writer, fed here) and a follower (server/cluster.ts's second worker, which
 * only follows the market through NOTIFY). A member's stream on the follower sees a pushed
 * close on the lead's notice, its cells equal the paid API's entries at that moment (on the same
 * process), the view costs no Token, a second stream of the same session replaces the first,
 * the list is bounded and remembered, and a plan without the API gets no stream. Then the same
 * with WORKERS=2 (one port, two worker processes, Postgres): streams held by both workers see
 * the close the lead was pushed on its notice, well before their heartbeat.
 */
import http from "node:http";
import { create } from "@bufbuild/protobuf";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import { getAccountSummary } from "../../src/accounts/accounts.ts";
import { createSession } from "../../src/accounts/sign-in/sessions.ts";
import {
  getWatchlist,
  MAX_WATCH_SYMBOLS,
  parseWatchlist,
  saveWatchlist,
  WatchlistError,
} from "../../src/accounts/watchlist.ts";
import type { DbHandle } from "../../src/db/client.ts";
import type { Candle } from "../../src/engine/index.ts";
import { createServer, type Server } from "../../src/server/create-server.ts";
import { WATCH_HEARTBEAT_MS } from "../../src/web/routes/watch.ts";
import type { ServerProcess } from "../support/processes.ts";
import { connectionOwners } from "../support/socket-owners.ts";
import { structureBreak } from "../support/structure-break.ts";
import { usingPostgres } from "../support/test-db.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { startWorkersServers, type WorkersServers } from "../support/workers-servers.ts";

const H = 3_600_000;
const COIN = "WLX";

/** A server-sent event stream read event by event. */
class EventReader {
  private buffer = "";
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }
  /** The next event named `name` (its data parsed), or null when the stream ends first. */
  async next(name: string): Promise<Record<string, any> | null> {
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const lines = block.split("\n");
        const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
        const data = lines.find((l) => l.startsWith("data: "))?.slice(6);
        if (event === name && data !== undefined) return JSON.parse(data);
        continue;
      }
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }
  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}

describe("live watchlist across a lead and a follower on one database", () => {
  let lead: TestServer;
  let follower: Server;
  let followerUrl: string;
  let member: { accountId: number; apiKey: string };
  let cookie: string;
  const clock = createTestClock(Date.parse("2026-11-20T06:00:00Z"));
  const start = Date.parse("2026-11-15T00:00:00Z");
  const { history, breaker } = structureBreak(start);

  beforeAll(async () => {
    // Every candle of the series is recent enough not to be stale at the test clock.
    clock.set(breaker.openTime + H + 60_000);
    lead = await startTestServer({ feed: true, clock });
    follower = createServer(lead.config, {
      db: lead.db.handle,
      clock,
      logger: pino({ level: "silent" }),
      internalToken: INTERNAL_TOKEN,
      role: "follower",
    });
    followerUrl = `http://127.0.0.1:${(await follower.start()).port}`;
    member = await lead.account({ plan: "node" });
    const { token } = await createSession(lead.db.handle, member.accountId, clock(), lead.config.sessionTtlMs);
    cookie = `sid=${token}`;
    await lead.feed!.ingest(history.map((c) => ({ symbol: COIN, tf: "1h", ...c, closed: true })));
    await saveWatchlist(lead.db.handle, member.accountId, { symbols: [COIN], timeframes: ["1h"] }, clock());
  }, 60_000);

  afterAll(async () => {
    await follower?.stop(500);
    await lead?.close();
  });

  const openStream = async (base: string) => {
    const res = await fetch(`${base}/watch/stream`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    return new EventReader(res.body!);
  };

  it(
    "a close pushed to the lead reaches the follower's stream on the lead's notice (well before " +
      "the stream's heartbeat), equal to the follower's API answer, and costs no Token",
    async () => {
      const stream = await openStream(followerUrl);
      let before = (await stream.next("cells"))!.cells[0];
      // The follower may not have followed the history's notice yet: its reload wakes the stream.
      while (before?.ok === false) before = (await stream.next("cells"))!.cells[0];
      // Having sent those cells, the stream waits on its process's readings hub and reads again
      // on its own only WATCH_HEARTBEAT_MS later: an update heard well within that of them came
      // from the lead's notice, however slowly the machine carried it.
      const heardAt = performance.now();
      expect(before).toMatchObject({ symbol: COIN, tf: "1h", ok: true });
      const tokensBefore = (await getAccountSummary(lead.db.handle, member.accountId, clock())).tokensLeft;

      await lead.feed!.ingest([{ symbol: COIN, tf: "1h", ...breaker, closed: true }]);
      const after = (await stream.next("cells"))!.cells[0];
      expect(performance.now() - heardAt).toBeLessThan(WATCH_HEARTBEAT_MS / 2);
      expect(after.price).toBe(breaker.close);
      expect(after.signal).toBe("LONG");
      expect(after.changed_at).toBe(breaker.openTime + H);

      // The view cost nothing; the API call below costs its one Token.
      expect((await getAccountSummary(lead.db.handle, member.accountId, clock())).tokensLeft).toBe(tokensBefore);
      const api = await fetch(`${followerUrl}/api/v1/signals?symbols=${COIN}&tf=1h`, {
        headers: { "x-api-key": member.apiKey },
      });
      expect(api.status).toBe(200);
      const entry = ((await api.json()) as { signals: Record<string, unknown>[] }).signals[0]!;
      for (const field of ["symbol", "tf", "ok", "price", "signal", "confirmed", "defense", "arming", "atr_pct"])
        expect([field, after[field]]).toEqual([field, entry[field]]);
      await stream.cancel();
    },
  );

  it("one stream per session: a second stream ends the first", async () => {
    const first = await openStream(lead.baseUrl);
    expect(await first.next("cells")).not.toBeNull();
    const second = await openStream(lead.baseUrl);
    expect(await second.next("cells")).not.toBeNull();
    // The first stream's body ends (same process: at once).
    expect(await first.next("cells")).toBeNull();
    await second.cancel();
  });

  it("a plan that cannot call the API gets no stream and the upgrade page", async () => {
    const basic = await lead.account({ plan: "basic" });
    const { token } = await createSession(lead.db.handle, basic.accountId, clock(), lead.config.sessionTtlMs);
    const stream = await fetch(`${lead.baseUrl}/watch/stream`, { headers: { cookie: `sid=${token}` } });
    expect(stream.status).toBe(403);
    const page = await fetch(`${lead.baseUrl}/watch`, { headers: { cookie: `sid=${token}` } });
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('id="watch-upgrade"');
  });

  it("the list is bounded and remembered", async () => {
    const many = Array.from({ length: MAX_WATCH_SYMBOLS + 1 }, (_, i) => `C${i}`).join(",");
    expect(() => parseWatchlist(many, ["1h"])).toThrow(WatchlistError);
    expect(() => parseWatchlist("BTC", [])).toThrow(WatchlistError);
    expect(() => parseWatchlist("BTC-USD", ["1h"])).toThrow(WatchlistError);
    await saveWatchlist(lead.db.handle, member.accountId, parseWatchlist("eth, btc, eth", ["4h", "1h"]), clock());
    expect(await getWatchlist(lead.db.handle, member.accountId)).toEqual({
      symbols: ["ETH", "BTC"],
      timeframes: ["1h", "4h"],
    });
  });
});

/** A stream opened on its own connection (so the kernel hands each to whichever worker is free). */
function openRawStream(
  url: string,
  cookie: string,
): Promise<{ reader: EventReader; localPort: number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { cookie }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          res.on("data", (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)));
          res.on("end", () => controller.close());
          res.on("error", () => controller.close());
        },
      });
      resolve({ reader: new EventReader(body), localPort: req.socket!.localPort!, close: () => req.destroy() });
    });
    req.on("error", reject);
  });
}

describe.runIf(usingPostgres)("live watchlist with WORKERS=2", () => {
  const TOKEN = "watchlist-workers-internal-token";
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${TOKEN}`);
    return next(req);
  };
  let deployment: WorkersServers;
  let server: ServerProcess;
  let db: DbHandle;
  const breakerOpen = Math.floor(Date.now() / H) * H - H;
  const { history, breaker } = structureBreak(breakerOpen - 60 * H);

  beforeAll(async () => {
    deployment = await startWorkersServers({ internalToken: TOKEN, env: { STALE_AFTER: "86400" } });
    server = deployment.servers[0]!;
    db = deployment.db;
  }, 120_000);

  afterAll(() => deployment?.close({ kill: true }));

  async function push(candles: Candle[]): Promise<void> {
    const sessionManager = new Http2SessionManager(server.internalUrl);
    const client = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.internalUrl, sessionManager, interceptors: [bearer] }),
    );
    async function* requests(): AsyncGenerator<PushCandlesRequest> {
      for (const candle of candles)
        yield create(PushCandlesRequestSchema, {
          symbol: COIN,
          tf: "1h",
          ...candle,
          openTime: BigInt(candle.openTime),
          closed: true,
        });
    }
    await client.pushCandles(requests(), { headers: { "x-ingest-mode": "backfill" } });
    sessionManager.abort();
  }

  it("streams on both workers see a close pushed to the lead on its notice (well before their heartbeat)", async () => {
    const admin = createClient(
      AdminService,
      createConnectTransport({ baseUrl: server.internalUrl, httpVersion: "1.1", interceptors: [bearer] }),
    );
    const created = await admin.createAccount({ email: "watch-workers@example.test", plan: "node" });
    const accountId = Number(created.account!.accountId);
    await saveWatchlist(db, accountId, { symbols: [COIN], timeframes: ["1h"] }, Date.now());
    await push(history);

    // One session per stream (a session holds one stream); new connections until both workers hold some.
    const streams: Array<{ reader: EventReader; localPort: number; close: () => void; heardAt: number }> = [];
    const owners = new Set<number>();
    for (let i = 0; i < 40 && owners.size < 2; i++) {
      const { token } = await createSession(db, accountId, Date.now(), 3_600_000);
      const stream = await openRawStream(`${server.baseUrl}/watch/stream`, `sid=${token}`);
      expect((await stream.reader.next("cells"))!.cells[0]).toMatchObject({ symbol: COIN, ok: true });
      streams.push({ ...stream, heardAt: performance.now() });
      const byPort = await connectionOwners(server.port, server.workerPids);
      owners.clear();
      for (const s of streams) if (byPort.has(s.localPort)) owners.add(byPort.get(s.localPort)!);
    }
    expect(owners).toEqual(new Set(server.workerPids));

    // As on the follower above: each stream, having sent its cells, reads again on its own only
    // WATCH_HEARTBEAT_MS later, so an update it sends well within that of its cells came from the
    // lead's notice, however slowly a loaded machine carried it ("within 2 s of the push" was a
    // guess of the machine's speed).
    await push([breaker]);
    const updates = await Promise.all(
      streams.map(async (s) => ({ cells: (await s.reader.next("cells"))!.cells, ms: performance.now() - s.heardAt })),
    );
    for (const update of updates) {
      expect(update.ms).toBeLessThan(WATCH_HEARTBEAT_MS / 2);
      expect(update.cells[0]).toMatchObject({ symbol: COIN, price: breaker.close, signal: "LONG" });
    }
    for (const s of streams) s.close();
  }, 120_000);
});
