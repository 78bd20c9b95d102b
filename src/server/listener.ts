/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2. Node's http2 server cannot fall back to
 * HTTP/1.1 without TLS (no ALPN), so we read the first bytes of each connection: the HTTP/2
 * client preface starts with "PRI * HTTP/2.0", which no HTTP/1.1 method does. gRPC clients
 * speak HTTP/2 (prior knowledge); curl, browsers and Connect/gRPC-Web over HTTP/1.1 do not.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { answerClientError, answerStreamTimeout } from "./http-errors.ts";
import type { RequestHandler } from "./request-handler.ts";
import { requestIdOf } from "./request-scope.ts";

export interface ListenerOptions {
  /** Largest header block accepted (HTTP/1.1 answers 431 above it, HTTP/2 resets the stream). */
  readonly maxHeaderBytes: number;
  /** A connection idle longer than this, between requests or in one, is closed (default 65 s). */
  readonly idleTimeoutMs?: number;
  /**
   * A request whose headers and body take longer than this is answered 408 (HTTP/1.1) or
   * cancelled (HTTP/2) (default 30 s).
   */
  readonly requestTimeoutMs?: number;
  /**
   * HTTP/2 requests may stream for as long as they like (the internal listener: feeders keep one
   * PushCandles stream open for hours). Without this, a request must be complete within
   * requestTimeoutMs, as on HTTP/1.1.
   */
  readonly longRequestStreams?: boolean;
  /**
   * A request whose header block takes longer than this is answered 408; a new connection that
   * does not say which protocol it speaks within it is closed (default min(10 s, request)).
   */
  readonly headersTimeoutMs?: number;
  /** An HTTP/2 stream is ended (RST_STREAM CANCEL) after this long, whatever it does (default: no limit). */
  readonly streamMaxLifeMs?: number;
  /** HTTP/2 streams one client address may hold open at once; more are refused (REFUSED_STREAM) (default: no limit). */
  readonly streamsPerAddress?: number;
  /**
   * An HTTP/2 session told to go away (idle, or draining) that has not closed after this long is
   * destroyed with its streams (default 10 s): a GOAWAY alone waits for every open stream.
   */
  readonly goawayGraceMs?: number;
}

/** Concurrent streams one HTTP/2 connection may open (Node's default is unlimited). */
export const MAX_CONCURRENT_STREAMS = 100;

export interface DualProtocolListener {
  /**
   * Binds and listens; resolves to the bound port. In a cluster worker the socket is shared
   * with the other workers through the primary unless `exclusive` (bound by this worker alone).
   */
  listen(port: number, host: string, options?: { exclusive?: boolean }): Promise<number>;
  /** Stops accepting, lets in-flight requests finish, closes idle connections; forceful after graceMs. */
  close(graceMs: number): Promise<void>;
}

const HTTP2_PREFACE_START = Buffer.from("PRI");

/** Header list size nghttp2 accepts before resetting a stream (our own limit answers below it). */
const H2_HEADER_LIST_CEILING = 256 * 1024;

/** While draining, a connection that has not sent its first request yet gets this long to do so. */
const FIRST_REQUEST_WINDOW_MS = 1_000;

interface Timeouts {
  readonly idleTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
}

function timeoutsOf(options: ListenerOptions): Timeouts {
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  return {
    idleTimeoutMs: options.idleTimeoutMs ?? 65_000,
    requestTimeoutMs,
    headersTimeoutMs: Math.min(options.headersTimeoutMs ?? 10_000, requestTimeoutMs),
  };
}

/** The HTTP/1.1 server and what draining needs to know of its connections. */
interface Http1Side {
  readonly server: http.Server;
  /** Connections serving a request now. */
  readonly active: Set<net.Socket>;
  /** Connections that have served at least one request. */
  readonly used: WeakSet<net.Socket>;
  /** Set while draining: each answer then closes its connection. */
  draining: boolean;
}

function createHttp1Side(handler: RequestHandler, maxHeaderBytes: number, t: Timeouts): Http1Side {
  const side = { active: new Set<net.Socket>(), used: new WeakSet<net.Socket>(), draining: false };
  const server = http.createServer(
    {
      maxHeaderSize: maxHeaderBytes,
      requestTimeout: t.requestTimeoutMs,
      headersTimeout: t.headersTimeoutMs,
      // An idle keep-alive connection stays open as long as any other idle connection
      // (IDLE_TIMEOUT, 65 s by default, as HTTP/2 sessions). Node's 5 s made the server close
      // first, which races the client: a request sent as the server closes is reset unread and
      // the client sees "socket hang up" (not charged, but not answered either). Only the side
      // that closes first can avoid the race, so the server outlasts clients and proxies that
      // keep idle connections up to 60 s (nginx, load balancers), and Node announces the figure
      // in `Keep-Alive: timeout=65` for those that honour it. Found by
      // test/reliability/multi-process-load.test.ts with WORKERS=2, whose slower bursts reused
      // connections at the 5 s mark.
      keepAliveTimeout: t.idleTimeoutMs,
      // Node checks both timeouts only this often (default 30 s), so a slow client could hold a
      // connection up to 30 s past them (found by test/reliability/fuzz.test.ts).
      connectionsCheckingInterval: Math.min(1_000, t.headersTimeoutMs),
    },
    (req, res) => {
      const socket = req.socket;
      side.active.add(socket);
      side.used.add(socket);
      // A response closes once: `on`, as `once` wraps each call's listener in another function.
      res.on("close", () => side.active.delete(socket));
      // The last answer on this connection: the client opens a new one (to another process).
      if (side.draining) res.setHeader("connection", "close");
      handler(req, res);
    },
  );
  // Node enforces requestTimeout and headersTimeout from a timer that a server starts when it
  // emits "listening". This server never listens (connections are handed to it), so without
  // this neither timeout was ever applied: a slowloris held its connection for good (found by
  // test/reliability/fuzz.test.ts).
  server.emit("listening");
  // Parser errors (431, 414, 400) and timeouts (408) answer the JSON error body, not Node's empty one.
  server.on("clientError", answerClientError);
  // A connection where nothing moves for idleTimeoutMs in the middle of a request (a client that
  // sends requests but never reads the answers, so the server's writes stall) is destroyed;
  // without it such a connection stayed open for good (found by test/reliability/fuzz.test.ts).
  // Between requests keepAliveTimeout closes idle connections after the same time.
  server.setTimeout(t.idleTimeoutMs);
  const http1: Http1Side = Object.assign(side, { server });
  return http1;
}

/** The HTTP/2 server, its open sessions, and how to ask one to go away. */
interface Http2Side {
  readonly server: http2.Http2Server;
  readonly sessions: Set<http2.ServerHttp2Session>;
  goAway(session: http2.ServerHttp2Session): void;
}

function createHttp2Side(handler: RequestHandler, options: ListenerOptions, t: Timeouts): Http2Side {
  const admitStream = streamAdmission(options, t.idleTimeoutMs);
  const server = http2.createServer(
    {
      maxSessionMemory: 16,
      // nghttp2 resets a stream over these limits before we see it (no body can be sent), so
      // they are set well above maxHeaderBytes and the header limit is enforced per request,
      // with the JSON 431 (withRequestLimits in http-errors.ts, which callers wrap handlers in). 2,000 fields as
      // HTTP/1.1's maxHeadersCount.
      maxHeaderListPairs: 2_000,
      settings: {
        maxHeaderListSize: Math.max(4 * options.maxHeaderBytes, H2_HEADER_LIST_CEILING),
        maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
      },
    },
    (req, res) => {
      const stream = req.stream;
      if (!admitStream(stream)) return;
      if (!stream.endAfterHeaders && !options.longRequestStreams) limitRequestTime(stream, res, t.requestTimeoutMs);
      handler(req, res);
    },
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  const goawayGraceMs = options.goawayGraceMs ?? 10_000;
  /**
   * GOAWAY, then destroy after the grace: Node's session.close() waits for every open stream,
   * so an idle session whose streams never end (health watches, a client that never reads and
   * so holds the flow-control window at 0) stayed open for good (100 watch
   * streams outlived the idle limit; 20 never-reading sessions held 20 connections for 100 s).
   */
  const goAway = (session: http2.ServerHttp2Session) => {
    if (session.destroyed) return;
    session.close();
    const timer = setTimeout(() => session.destroy(), goawayGraceMs);
    timer.unref();
    session.once("close", () => clearTimeout(timer));
  };
  server.on("session", (session) => {
    sessions.add(session);
    // No frame either way for the idle time: also what a stalled write (window 0) looks like.
    // On a listener with long request streams (the internal one: feeders' pushes, event
    // streams that may be quiet for long) an idle session is only asked to go away, as before.
    session.setTimeout(t.idleTimeoutMs, () => (options.longRequestStreams ? session.close() : goAway(session)));
    session.on("close", () => sessions.delete(session));
  });
  return { server, sessions, goAway };
}

/**
 * As HTTP/1.1's requestTimeout: the request (up to its END_STREAM) must arrive in time, else the
 * stream is cancelled. A session's idle timeout cannot do this: it closes gracefully, waiting
 * for open streams, and an unfinished request is one forever. Streams whose request is
 * complete (server streams included) are not limited.
 */
function limitRequestTime(
  stream: http2.ServerHttp2Stream,
  res: http2.Http2ServerResponse,
  requestTimeoutMs: number,
): void {
  const timer = setTimeout(() => {
    if (!stream.destroyed && !stream.readableEnded) answerStreamTimeout(stream, requestIdOf(res) ?? "");
  }, requestTimeoutMs);
  const done = () => clearTimeout(timer);
  stream.once("end", done);
  stream.once("close", done);
}

/**
 * Counts each new HTTP/2 stream against its client address (the socket's; this listener sees no
 * proxy header) and gives it its maximum life; the returned check is false when it is refused.
 */
function streamAdmission(
  options: ListenerOptions,
  idleTimeoutMs: number,
): (stream: http2.ServerHttp2Stream) => boolean {
  const streamsByAddress = new Map<string, number>();
  return (stream) => {
    const address = stream.session?.socket?.remoteAddress ?? "unknown";
    const open = streamsByAddress.get(address) ?? 0;
    if (options.streamsPerAddress !== undefined && open >= options.streamsPerAddress) {
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return false;
    }
    streamsByAddress.set(address, open + 1);
    const life =
      options.streamMaxLifeMs === undefined
        ? undefined
        : setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), options.streamMaxLifeMs);
    life?.unref();
    // A stalled write (the client keeps its flow-control window at 0, or never reads): the
    // stream is cancelled after the idle time without progress; then the session is idle too.
    stream.setTimeout(idleTimeoutMs, () => {
      if (stream.writableLength > 0 || stream.writableNeedDrain) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    stream.once("close", () => {
      if (life) clearTimeout(life);
      const left = (streamsByAddress.get(address) ?? 1) - 1;
      if (left <= 0) streamsByAddress.delete(address);
      else streamsByAddress.set(address, left);
    });
    return true;
  };
}

/** The TCP server that reads each connection's first bytes and hands it to HTTP/2 or HTTP/1.1. */
interface ProtocolSniffer {
  readonly tcp: net.Server;
  /** Every open connection. */
  readonly sockets: Set<net.Socket>;
  /** Connections speaking HTTP/2: their sessions drain by themselves (GOAWAY). */
  readonly h2Sockets: WeakSet<net.Socket>;
}

function createProtocolSniffer(h1: http.Server, h2: http2.Http2Server, headersTimeoutMs: number): ProtocolSniffer {
  const sockets = new Set<net.Socket>();
  const h2Sockets = new WeakSet<net.Socket>();
  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    // A connection that does not send its first bytes in time is dropped rather than held.
    socket.setTimeout(headersTimeoutMs, () => socket.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.length < HTTP2_PREFACE_START.length && HTTP2_PREFACE_START.subarray(0, head.length).equals(head)) return;
      socket.off("data", onData);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(head);
      const target = head.subarray(0, 3).equals(HTTP2_PREFACE_START) ? h2 : h1;
      if (target === h2) h2Sockets.add(socket);
      target.emit("connection", socket);
      process.nextTick(() => socket.resume());
    };
    socket.on("data", onData);
  });
  return { tcp, sockets, h2Sockets };
}

/**
 * Stops accepting, asks HTTP/2 sessions to go away and closes HTTP/1.1 connections as they fall
 * idle; destroys what is left after graceMs.
 */
async function drain(h1: Http1Side, h2: Http2Side, sniffer: ProtocolSniffer, graceMs: number): Promise<void> {
  h1.draining = true;
  const closed = new Promise<void>((resolve) => sniffer.tcp.close(() => resolve()));
  for (const session of h2.sessions) h2.goAway(session);
  const timer = setTimeout(() => {
    for (const socket of sniffer.sockets) socket.destroy();
  }, graceMs);
  // Idle keep-alive connections are closed at once and busy ones as soon as their answer is
  // out. A connection accepted just before the signal whose request is still on its way is
  // not idle but early: it gets a moment to deliver the request, which is then answered
  // (h1.closeIdleConnections() dropped such requests unanswered).
  const since = Date.now();
  const sweep = () => {
    const early = Date.now() - since < FIRST_REQUEST_WINDOW_MS;
    for (const socket of sniffer.sockets) {
      if (sniffer.h2Sockets.has(socket) || h1.active.has(socket)) continue;
      // (An answer still in the socket's buffer is flushed first.)
      if (h1.used.has(socket) || !early) socket.writableLength > 0 ? socket.end() : socket.destroy();
    }
  };
  sweep();
  const sweeper = setInterval(sweep, 50);
  await closed;
  clearTimeout(timer);
  clearInterval(sweeper);
  // Stops the timeout checks started with the HTTP/1.1 server (its "not running" error is expected).
  h1.server.close(() => {});
}

/** Builds (but does not start) a listener that hands each connection to the right server. */
export function createDualProtocolListener(handler: RequestHandler, options: ListenerOptions): DualProtocolListener {
  const timeouts = timeoutsOf(options);
  const h1 = createHttp1Side(handler, options.maxHeaderBytes, timeouts);
  const h2 = createHttp2Side(handler, options, timeouts);
  const sniffer = createProtocolSniffer(h1.server, h2.server, timeouts.headersTimeoutMs);
  return {
    listen(port, host, listenOptions = {}) {
      return new Promise((resolve, reject) => {
        sniffer.tcp.once("error", reject);
        sniffer.tcp.listen({ port, host, exclusive: listenOptions.exclusive ?? false }, () => {
          sniffer.tcp.off("error", reject);
          resolve((sniffer.tcp.address() as net.AddressInfo).port);
        });
      });
    },
    close: (graceMs) => drain(h1, h2, sniffer, graceMs),
  };
}
