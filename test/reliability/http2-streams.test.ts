/**
 * Unauthenticated HTTP/2 streams on the public port are bounded (issue 23, item 5), tried with
 * node:http2 clients on loopback against a real server:
 *
 * - 100 grpc.health.v1 Watch streams share one database probe (it was a SELECT 1 per stream);
 * - streams per client address are capped (more are refused with REFUSED_STREAM), other
 *   addresses are not affected;
 * - a stream ends at its maximum life, whatever it does;
 * - an idle session is told GOAWAY and destroyed after the grace even with open streams, and a
 *   client that never reads (flow-control window 0) loses its connection the same way.
 */
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDb, type TestDb } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

const STREAMS_PER_ADDRESS = 120;
const IDLE_S = 2;
const GRACE_S = 1;
const LIFE_S = 10;
/** The maximum life on the second server (whose idle limit is long, so only the life can end a stream). */
const SHORT_LIFE_S = 2;
const figures: Record<string, unknown> = {};

let db: TestDb;
let server: TestServer;
let shortLived: TestServer;
let statements = 0;

beforeAll(async () => {
  db = await createTestDb();
  // Every statement of the server goes through these two methods: the Watch probe is one `rows`.
  const handle = db.handle as { prepared: TestDb["handle"]["prepared"]; rows: TestDb["handle"]["rows"] };
  const rows = handle.rows.bind(handle);
  handle.rows = ((query: never) => {
    statements++;
    return rows(query);
  }) as typeof handle.rows;
  server = await startTestServer({
    db,
    env: {
      IDLE_TIMEOUT: String(IDLE_S),
      GOAWAY_GRACE: String(GRACE_S),
      STREAM_MAX_LIFE: String(LIFE_S),
      STREAMS_PER_ADDRESS: String(STREAMS_PER_ADDRESS),
    },
  });
  shortLived = await startTestServer({ env: { IDLE_TIMEOUT: "600", STREAM_MAX_LIFE: String(SHORT_LIFE_S) } });
});
afterAll(async () => {
  console.log(`[reliability figures] http2-streams ${JSON.stringify(figures)}`);
  await server?.close();
  await shortLived?.close();
  await db?.drop();
});

/** An empty HealthCheckRequest in a gRPC frame (uncompressed, length 0). */
const EMPTY_REQUEST = Buffer.from([0, 0, 0, 0, 0]);

function connect(
  localAddress = "127.0.0.1",
  settings: http2.Settings = {},
  target: TestServer = server,
): http2.ClientHttp2Session {
  const url = new URL(target.baseUrl);
  const session = http2.connect(target.baseUrl, {
    settings,
    createConnection: () => net.connect({ host: url.hostname, port: Number(url.port), localAddress }),
  });
  session.on("error", () => {});
  return session;
}

interface Watch {
  stream: http2.ClientHttp2Stream;
  /** Resolves at the first message (true) or when the stream ends without one (false). */
  first: Promise<boolean>;
  /** Resolves when the stream is closed, with its RST code. */
  closed: Promise<number>;
}

function watch(session: http2.ClientHttp2Session): Watch {
  const stream = session.request({
    ":method": "POST",
    ":path": "/grpc.health.v1.Health/Watch",
    "content-type": "application/grpc",
    te: "trailers",
  });
  stream.on("error", () => {});
  stream.end(EMPTY_REQUEST);
  const first = new Promise<boolean>((resolve) => {
    stream.once("data", () => resolve(true));
    stream.once("close", () => resolve(false));
  });
  const closed = new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode ?? 0)));
  stream.resume();
  return { stream, first, closed };
}

describe("HTTP/2 streams on the public listener", () => {
  it("100 Watch streams over 5 connections share one health probe", async () => {
    const sessions = Array.from({ length: 5 }, () => connect("127.0.0.41"));
    const before = statements;
    const watches = sessions.flatMap((s) => Array.from({ length: 20 }, () => watch(s)));
    expect(await Promise.all(watches.map((w) => w.first))).toEqual(Array(100).fill(true));
    const probes = statements - before;
    figures.watchStreams = { streams: 100, databaseStatementsForTheirFirstStatus: probes };
    // One probe for all of them (a little room for the server's own background statements);
    // one per stream before.
    expect(probes).toBeLessThanOrEqual(3);
    for (const s of sessions) s.destroy();
  });

  it("caps streams per client address (REFUSED_STREAM beyond), and another address is not affected", async () => {
    const sessions = Array.from({ length: 2 }, () => connect("127.0.0.42"));
    const watches = sessions.flatMap((s) => Array.from({ length: 70 }, () => watch(s)));
    const firsts = await Promise.all(watches.map((w) => w.first));
    const refused = (await Promise.all(watches.filter((_, i) => !firsts[i]).map((w) => w.closed))).filter(
      (code) => code === http2.constants.NGHTTP2_REFUSED_STREAM,
    );
    figures.perAddress = {
      limit: STREAMS_PER_ADDRESS,
      tried: watches.length,
      admitted: firsts.filter(Boolean).length,
      refused: refused.length,
    };
    expect(firsts.filter(Boolean)).toHaveLength(STREAMS_PER_ADDRESS);
    expect(refused).toHaveLength(watches.length - STREAMS_PER_ADDRESS);
    const other = connect("127.0.0.43");
    expect(await watch(other).first).toBe(true);
    for (const s of [...sessions, other]) s.destroy();
  });

  // The three tests below only wait for the servers' timers, each on its own session from its own address, and their
  // bounds only limit how late an end may come: they run at the same time.
  it.concurrent("ends a stream at its maximum life, whatever it does", async ({ expect }) => {
    // On a server whose idle limit is long: only the stream's life can end it.
    const session = connect("127.0.0.44", {}, shortLived);
    const started = Date.now();
    const w = watch(session);
    expect(await w.first).toBe(true);
    const code = await w.closed;
    const lived = Date.now() - started;
    figures.maxLife = { limitMs: SHORT_LIFE_S * 1000, livedMs: lived, rstCode: code };
    expect(code).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(lived).toBeGreaterThanOrEqual(SHORT_LIFE_S * 1000 - 50);
    session.destroy();
  });

  it.concurrent("an idle session with open streams gets GOAWAY and is destroyed after the grace", async ({
    expect,
  }) => {
    const session = connect("127.0.0.45");
    const started = Date.now();
    const goaway = new Promise<number>((resolve) => session.once("goaway", () => resolve(Date.now() - started)));
    const closed = new Promise<number>((resolve) => session.once("close", () => resolve(Date.now() - started)));
    const w = watch(session);
    expect(await w.first).toBe(true);
    const [goawayMs, closedMs] = [await goaway, await closed];
    figures.idleWithStream = {
      idleMs: IDLE_S * 1000,
      graceMs: GRACE_S * 1000,
      goawayAtMs: goawayMs,
      closedAtMs: closedMs,
    };
    expect(goawayMs).toBeGreaterThanOrEqual(IDLE_S * 1000 - 50);
    // Closed by the grace, not by the stream's maximum life.
    expect(closedMs).toBeLessThan(LIFE_S * 1000);
  });

  it.concurrent("a client that never reads (window 0) loses its connection after the idle time and the grace", async ({
    expect,
  }) => {
    const session = connect("127.0.0.46", { initialWindowSize: 0 });
    const started = Date.now();
    const closed = new Promise<number>((resolve) => session.once("close", () => resolve(Date.now() - started)));
    const stream = session.request({ ":path": "/api/v1/openapi.json" });
    stream.on("error", () => {});
    const response = new Promise<void>((resolve) => stream.once("response", () => resolve()));
    stream.end();
    await response;
    const closedMs = await closed;
    figures.neverReads = { closedAtMs: closedMs };
    expect(closedMs).toBeLessThan(LIFE_S * 1000);
  });
});
