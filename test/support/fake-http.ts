/**
 * A real HTTP server on 127.0.0.1:0 for the providers' fakes: records every request and
 * answers through the fake's handler (which may delay its answer, like a slow provider).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
}

export interface FakeAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export interface FakeHttp {
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a server whose answers come from `handle`. */
export async function startFakeHttp(handle: (req: RecordedRequest) => FakeAnswer): Promise<FakeHttp> {
  const requests: RecordedRequest[] = [];
  const pending = new Set<NodeJS.Timeout>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://fake");
    const recorded: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
    };
    requests.push(recorded);
    const answer = handle(recorded);
    const send = () => {
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? "");
    };
    if (!answer.delayMs) return send();
    const timer = setTimeout(() => {
      pending.delete(timer);
      send();
    }, answer.delayMs);
    pending.add(timer);
    res.on("close", () => {
      clearTimeout(timer);
      pending.delete(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const t of pending) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A JSON answer. */
export const json = (status: number, value: unknown, headers: Record<string, string> = {}): FakeAnswer => ({
  status,
  body: JSON.stringify(value),
  headers: { "content-type": "application/json; charset=utf-8", ...headers },
});
