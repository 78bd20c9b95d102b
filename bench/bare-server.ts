/**
 * The latency yardstick: a bare `node:http` server that answers every request with the given
 * JSON body (serialised per request, as any JSON API would) and nothing else: no routing, no
 * database, no logging. bench/api.ts runs it as its own process and drives it with the same
 * open-loop generator as the billed endpoint.
 *
 *   node bench/bare-server.ts /path/to/body.json     (prints {"port":N} once listening)
 */

import { readFileSync } from "node:fs";
import http from "node:http";

const body: unknown = JSON.parse(readFileSync(process.argv[2]!, "utf8"));
const server = http.createServer((_req, res) => {
  const payload = JSON.stringify(body);
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(payload),
    "cache-control": "no-store",
  });
  res.end(payload);
});
server.keepAliveTimeout = 5_000;
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: (server.address() as { port: number }).port }));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
