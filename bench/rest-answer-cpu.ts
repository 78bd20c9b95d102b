/**
 * CPU per REST answer of the two parts of a billed call that run in the server alone, old way
 * against new, in turns in one process: the answer's JSON (the mapped object then
 * JSON.stringify, against restJsonWriter straight from the message) and the handler context
 * (Connect's createHandlerContext linked to a shutdown signal and aborted at the end, against
 * the REST handler's own: one Headers of the request, one for the answer, one AbortController).
 * The answer is an 8-coin GetSignalsResponse like the benchmark's. The contexts are measured
 * with IN_FLIGHT calls in flight (ended in random order, as a server with a backlog ends
 * them): each linked context adds a listener to the one shutdown signal and removes it when it
 * ends, and an EventTarget finds the listener to remove by walking its list. Prints µs per call.
 *
 *   node bench/rest-answer-cpu.ts [calls per turn=20000] [turns=5] [in flight=0,1000]
 */
import { create } from "@bufbuild/protobuf";
import { createContextValues, createHandlerContext } from "@connectrpc/connect";
import { GetSignalsResponseSchema, SignalsService } from "../gen/signals/v1/signals_pb.js";
import { restJsonMapper, restJsonWriter } from "../src/server/rest-json.ts";

const CALLS = Number(process.argv[2] ?? 20_000);
const TURNS = Number(process.argv[3] ?? 5);
const IN_FLIGHT = (process.argv[4] ?? "0,1000").split(",").map(Number);

const COINS = ["BTC", "ETH", "SOL", "BNB", "XRP", "ADA", "DOGE", "AVAX"];
const answer = create(GetSignalsResponseSchema, {
  ok: true,
  tf: "1h",
  ts: 1_764_150_000_000n,
  tier: "node",
  billing: "1 credit per call",
  creditsLeft: 99_123n,
  signals: COINS.map((symbol, i) => ({
    symbol,
    tf: "1h",
    ok: true,
    price: 43_210.12 / (i + 1),
    signal: 2 + (i % 4),
    confirmed: i % 2 === 0,
    defense: i % 3 === 0 ? undefined : 41_000.5 / (i + 1),
    arming: { dir: i % 2 === 0 ? 1 : -1, score: 7, trigger: 44_000.25 / (i + 1), invalidation: 42_000 / (i + 1) },
    atrPct: 1.2345 + i / 100,
    signalId: `sig-${symbol}-1h-1764150000000`,
  })),
});
const method = SignalsService.method.getSignals;
const headers: [string, string][] = [
  ["host", "127.0.0.1:8080"],
  ["connection", "keep-alive"],
  ["x-api-key", "sig_live_0123456789abcdefghijklmnopqrstuv"],
  ["accept", "*/*"],
  ["user-agent", "undici"],
];
const DONE = Object.freeze({ done: true });

const mapper = restJsonMapper(GetSignalsResponseSchema);
const writer = restJsonWriter(GetSignalsResponseSchema);
if (writer(answer) !== JSON.stringify(mapper(answer))) throw new Error("the writer's text differs from the mapper's");

let sink = 0;
/** Keeps `inFlight` contexts open: each call opens one and ends one picked at random. */
function inFlight<T>(count: number, open: () => T, end: (ctx: T) => void): () => void {
  const live: T[] = [];
  for (let i = 0; i < count; i++) live.push(open());
  return () => {
    live.push(open());
    const at = Math.floor(Math.random() * live.length);
    const ctx = live[at]!;
    live[at] = live[live.length - 1]!;
    live.pop();
    end(ctx);
  };
}

/** A linked context; each in-flight count has its own shutdown signal (its listeners alone). */
const linked = (shutdown: AbortSignal) => () =>
  createHandlerContext({
    service: SignalsService,
    method,
    protocolName: "rest",
    requestMethod: "GET",
    url: "http://localhost/v1/signals?symbols=BTC",
    requestHeader: headers,
    shutdownSignal: shutdown,
  });
const own = new Set<{ requestHeader: Headers; controller: AbortController }>();
const unlinked = () => {
  const ctx = { requestHeader: new Headers(headers), responseHeader: new Headers(), values: createContextValues() };
  const entry = { requestHeader: ctx.requestHeader, controller: new AbortController() };
  own.add(entry);
  return entry;
};

const ways: Record<string, () => void> = {
  "JSON: mapped object + JSON.stringify": () => {
    sink += JSON.stringify(mapper(answer)).length;
  },
  "JSON: restJsonWriter": () => {
    sink += writer(answer).length;
  },
};
for (const count of IN_FLIGHT) {
  ways[`context: createHandlerContext, linked to the shutdown signal; ${count} in flight`] = inFlight(
    count,
    linked(new AbortController().signal),
    (ctx) => {
      sink += ctx.requestHeader.get("x-api-key")!.length + (ctx.signal.aborted ? 1 : 0);
      ctx.abort(DONE);
    },
  );
  ways[`context: the REST handler's (2 Headers, 1 AbortController, a Set); ${count} in flight`] = inFlight(
    count,
    unlinked,
    (entry) => {
      sink += entry.requestHeader.get("x-api-key")!.length + (entry.controller.signal.aborted ? 1 : 0);
      own.delete(entry);
      entry.controller.abort(DONE);
    },
  );
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const results = new Map<string, number[]>(Object.keys(ways).map((name) => [name, []]));
for (let turn = 0; turn <= TURNS; turn++) {
  for (const [name, run] of Object.entries(ways)) {
    const start = cpuUs();
    for (let i = 0; i < CALLS; i++) run();
    // Turn 0 warms every way up (optimised code) and is not counted.
    if (turn > 0) results.get(name)!.push((cpuUs() - start) / CALLS);
  }
}
console.log(`${CALLS} calls a turn, ${TURNS} turns (sink ${sink % 10})\n`);
console.log("| way | µs per call, each turn | median |\n|---|---|---|");
for (const [name, us] of results) {
  const sorted = [...us].sort((a, b) => a - b);
  console.log(
    `| ${name} | ${us.map((u) => u.toFixed(2)).join(" / ")} | ${sorted[Math.floor(us.length / 2)]!.toFixed(2)} |`,
  );
}
