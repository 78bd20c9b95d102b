/**
 * Plain HTTP/1.1 calls for load and fault tests, on node:http with an explicit agent (so the
 * number of open connections is known), and a tally of answers.
 */
import http from "node:http";

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The client's port of the connection that carried the call (see socket-owners.ts). */
  localPort: number | undefined;
}

/** GET `url`; resolves with the answer, or rejects when the connection fails or the timeout passes. */
export function httpGet(
  url: string,
  headers: Record<string, string>,
  agent: http.Agent,
  timeoutMs = 30_000,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      // Read now: an agent takes the socket back (res.socket becomes null) once the body ends.
      const localPort = res.socket.localPort;
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks).toString("utf8"),
          localPort,
        }),
      );
      res.on("error", reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
  });
}

/** Counts of keys. */
export class Tally {
  readonly counts = new Map<string, number>();
  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
  toObject(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort());
  }
}
