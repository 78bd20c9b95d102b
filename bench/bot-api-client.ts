/**
 * `node bench/bot-api-client.ts` (not in `npm run bench`): the client CPU a Bot API POST costs
 * with each HTTP client Node offers — `postJson` (src/alerts/bot-api.ts), `fetch`, and
 * node:http with a keep-alive agent — against a bare answering server in a child process (so
 * only the client's work is counted), 16 requests in flight, in alternating rounds.
 * Prints µs of this process's CPU per call for each round and the median.
 */
import { spawn } from "node:child_process";
import http from "node:http";
import { botAgent, postJson } from "../src/alerts/bot-api.ts";

const SINK = `
const http = require("node:http");
const body = '{"ok":true,"result":{"message_id":1,"chat":{"id":1},"date":1,"text":"x"}}';
const s = http.createServer((req, res) => { req.resume(); req.on("end", () => { res.writeHead(200, { "content-type": \
"application/json", "content-length": Buffer.byteLength(body) }); res.end(body); }); });
s.keepAliveTimeout = 60000;
s.listen(0, "127.0.0.1", () => console.log(s.address().port));`;

const CALLS = Number(process.env.CALLS ?? 4000);
const LANES = 16;
const ROUNDS = 5;

const sink = spawn(process.execPath, ["-e", SINK], { stdio: ["ignore", "pipe", "inherit"] });
const port = await new Promise<number>((resolve) =>
  sink.stdout!.once("data", (d) => resolve(Number(String(d).trim()))),
);
const url = new URL(`http://127.0.0.1:${port}/bot123:abc/sendMessage`);
const payload = JSON.stringify({
  chat_id: "123456",
  text: "BTC 15m: LONG at 66577 (defense 66012.1) ".repeat(4),
  disable_web_page_preview: true,
});
const pool = botAgent(url, LANES);
const nodeAgent = new http.Agent({ keepAlive: true, maxSockets: LANES });

function nodeHttpPost(): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent: nodeAgent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const clients: Record<string, () => Promise<unknown>> = {
  "postJson (undici request)": () => postJson(url, payload, pool, 10_000),
  fetch: async () =>
    (
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: payload,
        signal: AbortSignal.timeout(10_000),
      })
    ).text(),
  "node:http keep-alive agent": nodeHttpPost,
};

async function cpuPerCall(call: () => Promise<unknown>): Promise<number> {
  let left = CALLS;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: LANES }, async () => {
      while (left-- > 0) await call();
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / CALLS;
}

for (const call of Object.values(clients)) await cpuPerCall(call); // warm-up
const figures = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, call] of Object.entries(clients))
    figures.set(name, [...(figures.get(name) ?? []), Math.round(await cpuPerCall(call))]);
}
for (const [name, values] of figures)
  console.log(
    `${name}: ${values.join(" ")} µs per call; median ${[...values].sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]} µs`,
  );
sink.kill();
nodeAgent.destroy();
await pool.close();
