/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2. Node's http2 server cannot fall back to
 * HTTP/1.1 without TLS (no ALPN), so we read the first bytes of each connection: the HTTP/2
 * client preface starts with "PRI * HTTP/2.0", which no HTTP/1.1 method does. gRPC clients
 * speak HTTP/2 (prior knowledge); curl, browsers and Connect/gRPC-Web over HTTP/1.1 do not.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export interface ListenerOptions {
  /** Largest header block accepted (HTTP/1.1 answers 431 above it, HTTP/2 resets the stream). */
  readonly maxHeaderBytes: number;
  /** A connection idle longer than this is closed. */
  readonly idleTimeoutMs?: number;
  /** A request whose headers and body take longer than this is answered 408. */
  readonly requestTimeoutMs?: number;
}

export interface DualProtocolListener {
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting, lets in-flight requests finish, closes idle connections; forceful after graceMs. */
  close(graceMs: number): Promise<void>;
}

const HTTP2_PREFACE_START = Buffer.from("PRI");

/** Builds (but does not start) a listener that hands each connection to the right server. */
export function createDualProtocolListener(handler: RequestHandler, options: ListenerOptions): DualProtocolListener {
  const idleTimeoutMs = options.idleTimeoutMs ?? 65_000;
  const h1 = http.createServer(
    {
      maxHeaderSize: options.maxHeaderBytes,
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      headersTimeout: Math.min(options.requestTimeoutMs ?? 30_000, 10_000),
      keepAliveTimeout: 5_000,
    },
    handler,
  );
  const h2 = http2.createServer({ maxSessionMemory: 16, settings: { maxHeaderListSize: options.maxHeaderBytes } }, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.setTimeout(idleTimeoutMs, () => session.close());
    session.on("close", () => sessions.delete(session));
  });
  const sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    // A connection that never sends a byte is dropped rather than held forever.
    socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.length < HTTP2_PREFACE_START.length && HTTP2_PREFACE_START.subarray(0, head.length).equals(head)) return;
      socket.off("data", onData);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(head);
      const target = head.subarray(0, 3).equals(HTTP2_PREFACE_START) ? h2 : h1;
      target.emit("connection", socket);
      process.nextTick(() => socket.resume());
    };
    socket.on("data", onData);
  });
  return {
    listen(port, host) {
      return new Promise((resolve, reject) => {
        tcp.once("error", reject);
        tcp.listen(port, host, () => {
          tcp.off("error", reject);
          resolve((tcp.address() as net.AddressInfo).port);
        });
      });
    },
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      for (const session of sessions) session.close();
      h1.closeIdleConnections();
      h1.close();
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      // Keep-alive connections that finish their request are closed as soon as they go idle.
      const sweep = setInterval(() => h1.closeIdleConnections(), 50);
      await closed;
      clearTimeout(timer);
      clearInterval(sweep);
    },
  };
}
