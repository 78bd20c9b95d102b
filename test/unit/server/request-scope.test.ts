/**
 * The request scope's id goes out with every head, whichever way a handler writes it (a header
 * object, a status message, raw header pairs, an implicit head, headers set before), on HTTP/1.1
 * and HTTP/2; and it is not set on the response before the head, so that Node writes a head given
 * as one object straight from it (a header set earlier sends every header of the head through
 * setHeader).
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestIdOf, withRequestScope } from "../../../src/server/request-scope.ts";

/**
 * Each path writes its head one way; every answer also says what the response held before its
 * head. (Typed as HTTP/1.1's response: HTTP/2's compatibility response takes the same calls.)
 */
const ways: Record<string, (res: http.ServerResponse, before: string) => void> = {
  "/object": (res, before) => {
    res.writeHead(200, { "content-type": "text/plain", "x-before": before });
    res.end("ok");
  },
  "/message": (res, before) => {
    res.writeHead(201, "Made", { "x-before": before });
    res.end();
  },
  "/raw": (res, before) => {
    res.writeHead(200, ["x-before", before]);
    res.end();
  },
  "/implicit": (res, before) => {
    res.setHeader("x-before", before);
    res.end("ok");
  },
  "/set-then-object": (res, before) => {
    res.setHeader("x-set", "1");
    res.writeHead(200, { "x-before": before });
    res.end();
  },
  "/own-id": (res, before) => {
    res.writeHead(200, { "x-request-id": "chosen-by-handler", "x-before": before });
    res.end();
  },
};

const handler = withRequestScope(
  (req, res) => {
    const before = `${res.getHeaderNames().join(",")}|${requestIdOf(res) ?? ""}`;
    ways[req.url ?? ""]!(res as http.ServerResponse, before);
  },
  { logger: pino({ level: "silent" }), listener: "public", trustProxy: false },
);

let h1: http.Server;
let h2: http2.Http2Server;
let h1Url: string;
let h2Url: string;

beforeAll(async () => {
  h1 = http.createServer(handler);
  h2 = http2.createServer(handler);
  await Promise.all([
    new Promise<void>((resolve) => h1.listen(0, "127.0.0.1", resolve)),
    new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve)),
  ]);
  h1Url = `http://127.0.0.1:${(h1.address() as AddressInfo).port}`;
  h2Url = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
});

afterAll(async () => {
  h1.closeAllConnections();
  await Promise.all([new Promise((resolve) => h1.close(resolve)), new Promise((resolve) => h2.close(resolve))]);
});

function getH1(path: string, id: string): Promise<{ headers: http.IncomingHttpHeaders; status: number | undefined }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${h1Url}${path}`, { headers: { "x-request-id": id }, agent: false }, (res) => {
        res.resume();
        res.on("end", () => resolve({ headers: res.headers, status: res.statusCode }));
      })
      .on("error", reject);
  });
}

function getH2(path: string, id: string): Promise<http2.IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(h2Url);
    session.on("error", reject);
    const stream = session.request({ ":path": path, "x-request-id": id });
    stream.on("response", (headers) => {
      stream.resume();
      stream.on("end", () => {
        session.close();
        resolve(headers);
      });
    });
    stream.on("error", reject);
  });
}

describe("the request id on the head", () => {
  for (const path of Object.keys(ways).filter((p) => p !== "/own-id")) {
    it(`is sent when the head is written ${path.slice(1)}`, async () => {
      const one = await getH1(path, `h1${path.replace("/", "-")}`);
      expect(one.headers["x-request-id"]).toBe(`h1${path.replace("/", "-")}`);
      // (HTTP/2 has no status message: Node warns and drops it.)
      if (path === "/message") return;
      const two = await getH2(path, `h2${path.replace("/", "-")}`);
      expect(two["x-request-id"]).toBe(`h2${path.replace("/", "-")}`);
    });
  }

  it("is known from the response but not set on it before the head", async () => {
    const one = await getH1("/object", "before-1");
    expect(one.headers["x-before"]).toBe("|before-1");
    const two = await getH2("/object", "before-2");
    expect(two["x-before"]).toBe("|before-2");
  });

  it("keeps a status message and the handler's other headers", async () => {
    const one = await getH1("/message", "msg-1");
    expect(one.status).toBe(201);
    const set = await getH1("/set-then-object", "set-1");
    expect(set.headers["x-set"]).toBe("1");
    expect(set.headers["x-request-id"]).toBe("set-1");
  });

  it("leaves an id the handler wrote itself", async () => {
    const one = await getH1("/own-id", "given-1");
    expect(one.headers["x-request-id"]).toBe("chosen-by-handler");
  });
});
