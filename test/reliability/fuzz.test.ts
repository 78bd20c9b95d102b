/**
 * Hostile input, generated (fast-check) and sent over raw sockets, so nothing between the test
 * and the server tidies it up: random query strings (repeated parameters, huge values,
 * percent-encoded binary, invalid UTF-8), odd methods and paths, many and oversized headers,
 * bodies where none belong, random bytes to the Connect and gRPC endpoints (wrong content
 * types, truncated frames, huge declared lengths), and slow clients (a slowloris, a trickled
 * body, silent connections, an unfinished HTTP/2 stream, a client that never reads).
 *
 * What must hold: never a 5xx, never a hang (an answer, or the connection closed, within the
 * configured timeouts), nothing internal in any answer (stack traces, paths, SQL, hashes), and
 * a Token charged exactly for each 200.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { MAX_CONCURRENT_STREAMS } from "../../src/server/listener.ts";
import { ledgerBalances, ledgerCheck } from "../support/ledger.ts";
import { type RawAnswer, rawHttp1 } from "../support/raw-http.ts";
import { FULL, leakIn, timerLateness, waitFor } from "../support/reliability.ts";
import { serverHoldsConnection } from "../support/socket-owners.ts";
import { INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

/** Small timeouts so that slow clients are cut within seconds (the defaults are in the docs). */
const HEADERS_TIMEOUT_S = 2;
const REQUEST_TIMEOUT_S = 3;
const IDLE_TIMEOUT_S = 4;
const RUNS = FULL ? 1_500 : 120;
const figures: Record<string, unknown> = {};

let server: TestServer;
let apiKey: string;
let accountId: number;
/** 200s answered to the paid endpoint with the valid key (each must be one charge). */
let charged200 = 0;
const statuses = new Map<string, number>();
const logLines: string[] = [];

beforeAll(async () => {
  const logs = new PassThrough();
  logs.on("data", (chunk: Buffer) => logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  server = await startTestServer({
    // The market feed serves the snapshot and IngestService, so every internal service is routed.
    feed: true,
    logs,
    env: {
      LOG_LEVEL: "info",
      MONTHLY_GRANT: "100000000",
      DAILY_CAP: "10000000",
      FAILED_KEY_LIMIT: "1000000",
      HEADERS_TIMEOUT: String(HEADERS_TIMEOUT_S),
      REQUEST_TIMEOUT: String(REQUEST_TIMEOUT_S),
      IDLE_TIMEOUT: String(IDLE_TIMEOUT_S),
    },
  });
  ({ apiKey, accountId } = await server.account());
});
afterAll(async () => {
  figures.statuses = Object.fromEntries([...statuses.entries()].sort());
  console.log(`[reliability figures] fuzz ${JSON.stringify(figures)}`);
  await server?.close();
});

/**
 * Writes `request` (in pieces, with pauses, if given several) on a fresh connection and reads
 * until a complete answer, the server closing, or `timeoutMs`.
 */
function raw(
  port: number,
  request: Buffer | string | Array<Buffer | string>,
  timeoutMs = 10_000,
  pauseMs = 0,
): Promise<RawAnswer> {
  return rawHttp1(port, Array.isArray(request) ? request : [request], timeoutMs, pauseMs);
}

/** Records an answer and checks the promises every answer keeps. */
function checkAnswer(answer: RawAnswer, what: string, budgetMs = 10_000): void {
  statuses.set(String(answer.status ?? answer.end), (statuses.get(String(answer.status ?? answer.end)) ?? 0) + 1);
  if (answer.status !== null && answer.status >= 500)
    throw new Error(`${what}: ${answer.status} ${answer.body.slice(0, 200)}`);
  if (answer.end === "timeout") throw new Error(`${what}: no answer and no close within ${budgetMs} ms`);
  const leak = leakIn(`${answer.head}\n${answer.body}`);
  if (leak) throw new Error(`${what}: answer leaks ${leak}: ${answer.body.slice(0, 300)}`);
}

const pctByte = fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`);
const junk = fc.oneof(
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.array(pctByte, { maxLength: 40 }).map((a) => a.join("")),
  fc.constantFrom(
    "BTC",
    "btc",
    "BTCUSDT",
    " ETH ",
    ",,,",
    "%",
    "%ZZ",
    "%E2%82",
    "%C0%AF",
    "%ED%A0%80",
    "+",
    "&",
    "=",
    "__proto__",
    "constructor",
    "1h",
    "4H",
    "15m",
    "1d",
  ),
  fc.integer({ min: 1_000, max: FULL ? 20_000 : 8_000 }).map((n) => "A".repeat(n)),
);
const queryString = fc
  .array(fc.tuple(fc.constantFrom("symbols", "tf", "symbols[]", "x", "", "api_key", "tf "), junk), { maxLength: 12 })
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("&"));

describe("REST surface", () => {
  it("random query strings: 200, 400 or 431 — never a 5xx — and a charge for each 200 only", async () => {
    await fc.assert(
      fc.asyncProperty(queryString, async (q) => {
        const answer = await raw(
          server.port,
          `GET /api/v1/signals?${q} HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\nConnection: close\r\n\r\n`,
        );
        checkAnswer(answer, `query ${q.slice(0, 80)}`);
        expect([200, 400, 414, 431]).toContain(answer.status);
        if (answer.status === 200) {
          charged200++;
          const body = JSON.parse(answer.body) as { ok: boolean; signals: unknown[] };
          expect(body.ok).toBe(true);
          expect(body.signals.length).toBeLessThanOrEqual(8);
        }
      }),
      { numRuns: RUNS },
    );
    figures.queryStrings = RUNS;
  });

  it("odd methods and paths: a 4xx (or the connection closed), never a 5xx", async () => {
    const method = fc.constantFrom(
      "GET",
      "POST",
      "PUT",
      "DELETE",
      "PATCH",
      "OPTIONS",
      "HEAD",
      "TRACE",
      "PROPFIND",
      "M-SEARCH",
      "FOO",
      "get",
      "G E T",
      "GET\u0000",
      "CONNECT",
      "PRI",
    );
    const pathArb = fc.oneof(
      fc.constantFrom(
        "/api/v1/signals",
        "/api/v1/signals/",
        "/API/V1/SIGNALS",
        "//api/v1/signals",
        "/api/v1/../v1/signals",
        "/signals.v1.SignalsService/GetSignals",
        "*",
        "/%00",
        "/..%2f..%2fetc/passwd",
        "http://evil/api/v1/signals",
        "/healthz",
        "/metrics",
      ),
      fc.webPath(),
      fc.array(pctByte, { maxLength: 30 }).map((a) => `/${a.join("")}`),
    );
    await fc.assert(
      fc.asyncProperty(method, pathArb, async (m, p) => {
        const answer = await raw(
          server.port,
          `${m} ${p} HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\nConnection: close\r\n\r\n`,
        );
        checkAnswer(answer, `${m} ${p}`);
        if (answer.status === 200) {
          expect(m).toMatch(/^(GET|HEAD)$/);
          // Only the paid endpoint charges (web pages answer 200 too).
          if (answer.body.includes('"credits_left"') || (m === "HEAD" && /\/api\/v1\/signals/.test(p))) charged200++;
        }
      }),
      { numRuns: RUNS },
    );
    figures.methodsAndPaths = RUNS;
  });

  it("many headers, odd header bytes, oversized header blocks: 200, 400, 401 or 431, never a 5xx", async () => {
    const headerName = fc.stringMatching(/^[A-Za-z0-9-]{1,20}$/);
    const headerValue = fc.oneof(
      fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, "")),
      fc
        .uint8Array({ maxLength: 60 })
        .map((b) => Buffer.from(b.filter((x) => x !== 10 && x !== 13)).toString("latin1")),
      fc.integer({ min: 1_000, max: 20_000 }).map((n) => "v".repeat(n)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(headerName, headerValue), { maxLength: FULL ? 400 : 120 }),
        fc.boolean(),
        async (headers, withKey) => {
          const lines = headers.map(([n, v]) => `${n}: ${v}`).join("\r\n");
          const key = withKey ? `x-api-key: ${apiKey}\r\n` : "";
          const head = `GET /api/v1/signals?symbols=BTC HTTP/1.1\r\nHost: x\r\n${key}${lines}${lines ? "\r\n" : ""}`;
          const request = Buffer.from(`${head}Connection: close\r\n\r\n`, "latin1");
          const answer = await raw(server.port, request);
          checkAnswer(answer, `${headers.length} headers`);
          expect([200, 400, 401, 403, 422, 429, 431]).toContain(answer.status);
          if (answer.status === 200) charged200++;
        },
      ),
      { numRuns: RUNS },
    );
    // 2,500 small headers (Node keeps the first 2,000) and a 64 KB header block.
    const many = Array.from({ length: 2_500 }, (_, i) => `x-h${i}: ${i}`).join("\r\n");
    const a = await raw(
      server.port,
      `GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\n${many}\r\nConnection: close\r\n\r\n`,
    );
    checkAnswer(a, "2,500 headers");
    expect(a.status).toBe(431);
    const big = await raw(
      server.port,
      `GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\nx-big: ` +
        `${"q".repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`,
    );
    checkAnswer(big, "64 KB header");
    expect(big.status).toBe(431);
    figures.headerSets = RUNS + 2;
  });

  it("bodies where none belong: answered at once, and the connection does not stay open to swallow them", async () => {
    const cases = await Promise.all([
      raw(server.port, [
        `POST /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\nContent-Length: 10000000000\r\n\r\n`,
        "x".repeat(1000),
      ]),
      raw(server.port, [
        `GET /api/v1/signals?symbols=BTC HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\n` +
          `Content-Length: ${5_000_000}\r\n\r\n`,
        Buffer.alloc(64 * 1024),
      ]),
      raw(server.port, [
        `GET /nowhere HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`,
        "ffffffff\r\n",
        Buffer.alloc(64 * 1024),
      ]),
      raw(
        server.port,
        `GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nContent-Length: ` +
          `5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      ),
    ]);
    for (const [i, c] of cases.entries()) checkAnswer(c, `body case ${i}`);
    // A declared body over 64 KiB on a non-RPC path is refused before routing (413, not charged).
    expect(cases.map((c) => c.status)).toEqual([413, 413, 404, 400]);
    figures.bodyCases = cases.length;
  });
});

describe("Connect and gRPC surfaces", () => {
  const methods = [SignalsService.method.getSignals];
  const contentTypes = fc.constantFrom(
    "application/json",
    "application/proto",
    "application/connect+proto",
    "application/connect+json",
    "application/grpc",
    "application/grpc+proto",
    "application/grpc-web",
    "application/grpc-web+proto",
    "text/plain",
    "",
    "application/x-www-form-urlencoded",
    "application/json; charset=latin1",
  );
  const body = fc.oneof(
    fc.uint8Array({ maxLength: 2_000 }),
    fc.json().map((j) => new TextEncoder().encode(j)),
    // A gRPC frame: flag, declared length, and fewer (or more) bytes than declared.
    fc
      .tuple(
        fc.integer({ min: 0, max: 255 }),
        fc.oneof(fc.integer({ min: 0, max: 200 }), fc.constant(0xffffffff), fc.constant(70_000)),
        fc.uint8Array({ maxLength: 300 }),
      )
      .map(([flag, declared, payload]) => {
        const frame = Buffer.alloc(5 + payload.length);
        frame[0] = flag;
        frame.writeUInt32BE(declared >>> 0, 1);
        Buffer.from(payload).copy(frame, 5);
        return new Uint8Array(frame);
      }),
  );

  it("random bodies over HTTP/1.1 (Connect, gRPC-Web): a 4xx or a Connect error, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(contentTypes, body, fc.boolean(), async (type, bytes, withKey) => {
        const path = `/${SignalsService.typeName}/${methods[0]!.name}`;
        const headers = `${type ? `Content-Type: ${type}\r\n` : ""}${withKey ? `x-api-key: ${apiKey}\r\n` : ""}`;
        const head =
          `POST ${path} HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: ` +
          `${bytes.length}\r\nConnection: close\r\n\r\n`;
        const answer = await raw(server.port, Buffer.concat([Buffer.from(head), Buffer.from(bytes)]));
        checkAnswer(answer, `${type} ${bytes.length} bytes`);
        // gRPC-Web answers 200 with the status in a trailer frame: never internal or unknown.
        if (/grpc-status: *(2|13)\b/i.test(answer.head + answer.body))
          throw new Error(`grpc-status internal/unknown for ${type}`);
        if (answer.status === 200 && withKey && !/grpc-status: *[1-9]/i.test(answer.head + answer.body)) charged200++;
      }),
      { numRuns: RUNS },
    );
    figures.connectBodies = RUNS;
  });

  /** One gRPC call over HTTP/2 with raw bytes as the request body; returns status and trailers. */
  function grpcRaw(
    port: number,
    path: string,
    contentType: string,
    bytes: Uint8Array,
    headers: Record<string, string> = {},
  ) {
    return new Promise<{ httpStatus: number; grpcStatus: string | undefined; message: string; body: string }>(
      (resolve, reject) => {
        const session = http2.connect(`http://127.0.0.1:${port}`);
        session.on("error", reject);
        const stream = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": contentType,
          te: "trailers",
          ...headers,
        });
        let httpStatus = 0;
        let trailers: http2.IncomingHttpHeaders = {};
        let data = "";
        stream.on("response", (h) => {
          httpStatus = Number(h[":status"]);
          trailers = { ...h };
        });
        stream.on("trailers", (t) => (trailers = { ...trailers, ...t }));
        stream.on("data", (d: Buffer) => (data += d.toString("latin1")));
        const timer = setTimeout(() => reject(new Error(`gRPC ${path} hung`)), 10_000);
        stream.on("close", () => {
          clearTimeout(timer);
          session.close();
          resolve({
            httpStatus,
            grpcStatus: trailers["grpc-status"] as string | undefined,
            message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
            body: data,
          });
        });
        stream.on("error", () => {});
        stream.end(Buffer.from(bytes));
      },
    );
  }

  it(
    "random bytes, wrong content types, truncated frames and huge declared " +
      "lengths over gRPC (HTTP/2): never INTERNAL or UNKNOWN",
    async () => {
      const seen = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(
            "application/grpc",
            "application/grpc+proto",
            "application/grpc+json",
            "application/json",
            "application/octet-stream",
          ),
          body,
          fc.boolean(),
          async (type, bytes, withKey) => {
            const r = await grpcRaw(
              server.port,
              `/${SignalsService.typeName}/GetSignals`,
              type,
              bytes,
              withKey ? { "x-api-key": apiKey } : {},
            );
            const code = r.grpcStatus ?? `http ${r.httpStatus}`;
            seen.set(code, (seen.get(code) ?? 0) + 1);
            expect(r.httpStatus).toBeLessThan(500);
            expect(["2", "13"]).not.toContain(r.grpcStatus);
            expect(leakIn(r.message + r.body)).toBeNull();
            // grpc-status 0, or a Connect (JSON over HTTP/2) 200.
            if (r.httpStatus === 200 && (r.grpcStatus === "0" || r.grpcStatus === undefined) && withKey) charged200++;
          },
        ),
        { numRuns: RUNS },
      );
      figures.grpcBodies = RUNS;
      figures.grpcStatuses = Object.fromEntries(seen);
    },
  );

  it(
    "the internal listener: every method of every internal service refuses " +
      "random bytes without the token, and fails cleanly with it",
    async () => {
      const services = [AdminService, IngestService, SignalEventsService];
      const all = services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`));
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...all),
          body,
          fc.constantFrom("none", "wrong", "right"),
          async (path, bytes, auth) => {
            // A deadline, so that a body that happens to be a valid stream request does not tail forever.
            const headers: Record<string, string> = {
              "grpc-timeout": "2S",
              ...(auth === "none"
                ? {}
                : { authorization: `Bearer ${auth === "right" ? INTERNAL_TOKEN : "not-the-token-0123456789"}` }),
            };
            const r = await grpcRaw(server.internalPort, path, "application/grpc", bytes, headers);
            expect(r.httpStatus).toBeLessThan(500);
            // Refused: UNAUTHENTICATED, or INVALID_ARGUMENT / RESOURCE_EXHAUSTED when the body is
            // rejected before the token is looked at (key-security.test.ts checks every method with
            // a well-formed request: always UNAUTHENTICATED).
            if (auth !== "right") expect(["16", "3", "8", "12"]).toContain(r.grpcStatus);
            else expect(["2", "13"]).not.toContain(r.grpcStatus);
            expect(leakIn(r.message + r.body)).toBeNull();
          },
        ),
        { numRuns: RUNS },
      );
      figures.internalBodies = RUNS;
    },
  );
});

describe("slow and stuck clients", () => {
  it(
    "are cut within the configured timeouts: slowloris, trickled body, silent connections, " +
      "unfinished HTTP/2 stream, stream flood",
    async () => {
      // Each bound is the configured timeout plus a margin: both this process's timers (which pace
      // the slow clients) and the server's run late on a loaded machine, by up to the timeout again
      // and by twice the lateness of this process's timers measured during the test. A server that
      // never cuts would keep these connections for 20 s.
      const slack = 2_500;
      const lateness = timerLateness();
      const bound = (timeoutS: number) => 2 * timeoutS * 1000 + slack + 2 * lateness.maxMs();
      const started = Date.now();

      // HTTP/1.1 and the protocol sniffing.
      const headerBytes =
        `GET /api/v1/signals HTTP/1.1\r\nHost: x\r\nx-api-key: ${apiKey}\r\nx-slow: ${"s".repeat(60)}\r\n\r\n`.split(
          "",
        );
      const h1 = Promise.all([
        // One header byte every 250 ms: the header block never completes within HEADERS_TIMEOUT.
        raw(server.port, headerBytes, 20_000, 250),
        // Headers at once, then one body byte every 250 ms: REQUEST_TIMEOUT ends it.
        raw(
          server.port,
          [
            `POST /signals.v1.SignalsService/GetSignals HTTP/1.1\r\nHost: x\r\nContent-Type: ` +
              `application/json\r\nContent-Length: 1000\r\n\r\n`,
            ...Array(60).fill("{"),
          ],
          20_000,
          250,
        ),
        // Connects and says nothing.
        raw(server.port, [], 20_000),
        // Two bytes of the HTTP/2 preface, then nothing.
        raw(server.port, "PR", 20_000),
      ]);

      // HTTP/2: a unary call whose request never ends is cancelled after REQUEST_TIMEOUT; more
      // streams at once than allowed are refused, none is left hanging; the idle session closes.
      const h2 = (async () => {
        const session = http2.connect(server.baseUrl);
        session.on("error", () => {});
        const stuckAt = Date.now();
        const stuck = await new Promise<{ ms: number; code: number | undefined }>((resolve) => {
          const stream = session.request({
            ":method": "POST",
            ":path": "/signals.v1.SignalsService/GetSignals",
            "content-type": "application/grpc",
            te: "trailers",
            "x-api-key": apiKey,
          });
          stream.on("error", () => {});
          // The answer (408 with the JSON body, then RST_STREAM NO_ERROR) is read, as a client does.
          stream.resume();
          stream.on("close", () => resolve({ ms: Date.now() - stuckAt, code: stream.rstCode }));
          stream.write(Buffer.from([0, 0, 0, 0, 100, 1, 2, 3]));
        });
        const flood = await Promise.all(
          Array.from(
            { length: MAX_CONCURRENT_STREAMS + 50 },
            () =>
              new Promise<string>((resolve) => {
                const s = session.request({
                  ":method": "POST",
                  ":path": "/signals.v1.SignalsService/GetSignals",
                  "content-type": "application/grpc",
                  te: "trailers",
                });
                s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
                s.resume();
                s.on("close", () => resolve(s.rstCode === 0 ? "closed" : `rst ${s.rstCode}`));
                s.write(Buffer.from([0, 0, 0, 0, 50]));
              }),
          ),
        );
        const idleAt = Date.now();
        await new Promise<void>((resolve) => (session.closed ? resolve() : session.once("close", () => resolve())));
        return { stuck, flood, sessionMs: Date.now() - idleAt };
      })();

      const [[slowloris, slowBody, silent, partialPreface], { stuck, flood, sessionMs }] = await Promise.all([h1, h2]);
      const limits = {
        slowloris: HEADERS_TIMEOUT_S,
        slowBody: REQUEST_TIMEOUT_S,
        silent: HEADERS_TIMEOUT_S,
        partialPreface: HEADERS_TIMEOUT_S,
      };
      for (const [name, answer] of Object.entries({ slowloris, slowBody, silent, partialPreface })) {
        expect(answer.end, name).not.toBe("timeout");
        expect(answer.ms, name).toBeLessThan(bound(limits[name as keyof typeof limits]));
        if (answer.status !== null) expect([400, 408], name).toContain(answer.status);
      }
      expect(stuck.ms).toBeLessThan(bound(REQUEST_TIMEOUT_S));
      expect(flood.length).toBe(MAX_CONCURRENT_STREAMS + 50);
      expect(sessionMs).toBeLessThan(bound(REQUEST_TIMEOUT_S + IDLE_TIMEOUT_S));
      lateness.stop();
      figures.slowClients = {
        timerLatenessMs: lateness.maxMs(),
        slowlorisMs: slowloris.ms,
        slowBodyMs: slowBody.ms,
        silentMs: silent.ms,
        partialPrefaceMs: partialPreface.ms,
        stuckStreamMs: stuck.ms,
        floodStreams: flood.length,
        floodOutcomes: [...new Set(flood)],
        idleSessionClosedMs: sessionMs,
        totalMs: Date.now() - started,
      };
    },
  );
});

describe("a client that never reads", () => {
  it("is cut once the server's writes have stalled for the idle time, not before IDLE_TIMEOUT", async () => {
    // It sends 30,000 pipelined requests and reads no answer, so the server's writes stall and
    // it stops reading, with a request left half read. On the server above that request's
    // HEADERS_TIMEOUT (2 s, checked every second) cut the connection at about 3 s, before the idle
    // rule could act (Node lets a socket time out only at twice its idle time while a write is
    // queued: 8 s for 4 s). So this server allows headers and requests far longer than the wait
    // below: a close seen within it comes from IDLE_TIMEOUT, and a server without the idle rule
    // fails the wait. When the writes stall depends on how fast the server answers, so the wait
    // has no tighter bound; the close cannot come before IDLE_TIMEOUT after the connection opened.
    const patient = await startTestServer({
      env: { HEADERS_TIMEOUT: "600", REQUEST_TIMEOUT: "600", IDLE_TIMEOUT: String(IDLE_TIMEOUT_S) },
    });
    try {
      // (The premise: the wait ends before the headers or request timeout could cut anything.)
      expect(EVENT_WAIT_MS).toBeLessThan(600_000);
      const { end, closedMs } = await new Promise<{ end: string; closedMs: number }>((resolve, reject) => {
        let closedMs = Number.NaN;
        const socket = net.connect(patient.port, "127.0.0.1", () => {
          const connectedAt = Date.now();
          socket.write("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n".repeat(30_000));
          socket.pause();
          // A paused socket does not see the close: it starts reading once the kernel shows the
          // server's end closed, and must then find the end of the stream.
          waitFor(
            async () => !(await serverHoldsConnection(patient.port, socket.localPort!)),
            EVENT_WAIT_MS,
            "the server to close the connection of a client that never reads",
          ).then(() => {
            closedMs = Date.now() - connectedAt;
            socket.on("data", () => {});
            socket.resume();
            setTimeout(() => {
              socket.destroy();
              resolve({ end: "still open", closedMs });
            }, EVENT_WAIT_MS).unref();
          }, reject);
        });
        socket.on("error", () => resolve({ end: "reset", closedMs }));
        socket.on("end", () => resolve({ end: "closed", closedMs }));
      });
      figures.neverReads = { end, closedMs };
      expect(["closed", "reset"]).toContain(end);
      expect(closedMs).toBeGreaterThanOrEqual(IDLE_TIMEOUT_S * 1000 - 50);
    } finally {
      await patient.close();
    }
  });
});

describe("idle keep-alive connections", () => {
  it(
    "are kept for IDLE_TIMEOUT, as the Keep-Alive header announces, " +
      "so that a client reusing one sooner is never cut off",
    async () => {
      // The server closing first (Node's 5 s) reset requests sent as it closed ("socket hang up").
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const get = () =>
          new Promise<{
            status: number;
            keepAlive: string | string[] | undefined;
            socket: net.Socket;
            reused: boolean;
          }>((resolve, reject) => {
            const req = http.get(`${server.baseUrl}/nowhere`, { agent }, (res) => {
              res.resume();
              res.on("end", () =>
                resolve({
                  status: res.statusCode!,
                  keepAlive: res.headers["keep-alive"],
                  socket: req.socket as net.Socket,
                  reused: req.reusedSocket,
                }),
              );
            });
            req.on("error", reject);
          });
        const first = await get();
        expect(first.keepAlive).toBe(`timeout=${IDLE_TIMEOUT_S}`);
        // Reused after most of the idle time: the same connection answers.
        await new Promise((r) => setTimeout(r, IDLE_TIMEOUT_S * 1000 - 1_000));
        const lateness = timerLateness();
        // Before the server answers, so before its idle time starts: the close cannot come sooner
        // than IDLE_TIMEOUT after this, however late this process sees the answer end.
        const askedAt = Date.now();
        const second = await get();
        expect({ status: second.status, reused: second.reused, same: second.socket === first.socket }).toEqual({
          status: first.status,
          reused: true,
          same: true,
        });
        // Then left idle: the server closes it once IDLE_TIMEOUT has passed (plus Node's 1 s margin).
        const idleAt = Date.now();
        await new Promise((resolve) =>
          second.socket.destroyed ? resolve(null) : second.socket.once("close", resolve),
        );
        const idleMs = Date.now() - idleAt;
        lateness.stop();
        figures.idleKeepAliveClosedMs = idleMs;
        expect(Date.now() - askedAt).toBeGreaterThanOrEqual(IDLE_TIMEOUT_S * 1000 - 50);
        // The server's timer runs as late as this process's (one event loop): twice that lateness.
        expect(idleMs).toBeLessThan(IDLE_TIMEOUT_S * 1000 + 1_000 + 2_500 + 2 * lateness.maxMs());
      } finally {
        agent.destroy();
      }
    },
  );
});

describe("afterwards", () => {
  it("every 200 of the paid endpoint was charged once, and nothing else was", async () => {
    const check = await ledgerCheck(server.db.handle, accountId);
    figures.charged200 = charged200;
    expect(check.charges).toBe(charged200);
    expect(ledgerBalances(check)).toBe(true);
  });

  it("wrote no error with a stack trace, path or SQL to the log, and the server still answers", async () => {
    const errors = logLines.filter((l) => /"level":(50|60)/.test(l));
    figures.errorLogLines = errors.length;
    expect(errors.slice(0, 5)).toEqual([]);
    for (const line of logLines) expect(leakIn(line), line.slice(0, 300)).toBeNull();
    const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC`, { headers: { "x-api-key": apiKey } });
    expect(res.status).toBe(200);
    charged200++;
    expect((await ledgerCheck(server.db.handle, accountId)).charges).toBe(charged200);
  });
});
