/**
 * Raw HTTP clients for tests that must see exactly what the server writes: HTTP/1.1 over a
 * node:net socket (bytes in, bytes out) and HTTP/2 over node:http2 with prior knowledge.
 */
import http2 from "node:http2";
import net from "node:net";

export interface RawAnswer {
  readonly status: number | null;
  /** The status line and header lines as received (HTTP/1.1). */
  readonly head: string;
  /** Time from connecting to the end of the exchange. */
  readonly ms: number;
  /** Header names lower-cased. */
  readonly headers: Record<string, string>;
  readonly body: string;
  /** How the exchange ended: a complete answer, the server closing, or our own timeout. */
  readonly end: "answer" | "closed" | "timeout";
}

/**
 * Writes `pieces` on a fresh HTTP/1.1 connection (with `pauseMs` between them) and reads until
 * one whole answer, the server closing, or `timeoutMs`.
 */
export function rawHttp1(
  port: number,
  pieces: Array<string | Buffer>,
  timeoutMs = 10_000,
  pauseMs = 0,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, "127.0.0.1");
    let data = Buffer.alloc(0);
    let settled = false;
    const finish = (end: RawAnswer["end"]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const split = data.indexOf("\r\n\r\n");
      const head = (split >= 0 ? data.subarray(0, split) : data).toString("latin1");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
      resolve({
        status: match ? Number(match[1]) : null,
        head,
        headers,
        body: split >= 0 ? data.subarray(split + 4).toString("utf8") : "",
        end,
        ms: Date.now() - started,
      });
    };
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const split = data.indexOf("\r\n\r\n");
      if (split < 0) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(data.subarray(0, split).toString("latin1"));
      if (length && data.length - (split + 4) >= Number(length[1])) finish("answer");
    });
    socket.on("close", () => finish("closed"));
    socket.on("error", () => finish("closed"));
    void (async () => {
      for (const piece of pieces) {
        if (socket.destroyed) return;
        socket.write(piece);
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
    })();
  });
}

/**
 * One HTTP/2 request on a fresh prior-knowledge session. `body` is sent as given; with
 * `endStream: false` the request is left open (for timeouts).
 */
export function rawHttp2(
  port: number,
  headers: http2.OutgoingHttpHeaders,
  options: { body?: string | Buffer; endStream?: boolean; timeoutMs?: number } = {},
): Promise<RawAnswer & { rstCode: number | undefined }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const session = http2.connect(`http://127.0.0.1:${port}`, {
      maxHeaderListPairs: 10_000,
      maxSendHeaderBlockLength: 1 << 20,
      settings: { maxHeaderListSize: 1 << 20 },
    });
    session.on("error", () => {});
    const stream = session.request(headers, { endStream: options.endStream ?? options.body === undefined });
    let status: number | null = null;
    const responseHeaders: Record<string, string> = {};
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (end: RawAnswer["end"]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const rstCode = stream.rstCode;
      session.destroy();
      resolve({
        status,
        head: "",
        headers: responseHeaders,
        body: Buffer.concat(chunks).toString("utf8"),
        end,
        rstCode,
        ms: Date.now() - started,
      });
    };
    const timer = setTimeout(() => finish("timeout"), options.timeoutMs ?? 10_000);
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      for (const [k, v] of Object.entries(h)) if (!k.startsWith(":")) responseHeaders[k] = String(v);
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => finish("answer"));
    stream.on("close", () => finish(status === null ? "closed" : "answer"));
    stream.on("error", () => {});
    if (options.body !== undefined) {
      if (options.endStream === false) stream.write(options.body);
      else stream.end(options.body);
    }
  });
}
