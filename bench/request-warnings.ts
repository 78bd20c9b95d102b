/**
 * What x-signals-warnings costs a paid call that has nothing to warn about: the request read
 * before (normaliseTimeframe + normaliseSymbols) against now (readSignalsRequest, the warnings
 * of the entries, and REST's unknown-parameter check), in the same run, taking turns, for the
 * common call `symbols=BTC,ETH&tf=1h` and a full one of 8 symbols. Pure CPU, no server: the
 * figure is nanoseconds per call beside a billed call's ~1 ms.
 *
 * Run: node bench/request-warnings.ts   (recorded in bench/README.md)
 */
import { normaliseSymbols, normaliseTimeframe, readSignalsRequest } from "../src/signals/request.ts";
import { setCallWarnings } from "../src/signals/warnings.ts";

const ROUNDS = 7;
const CALLS = 200_000;
const FIELDS = new Set(["symbols", "tf"]);

function timeIt(fn: () => void): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) fn();
  return Number(process.hrtime.bigint() - start) / CALLS;
}

for (const [label, query] of [
  ["symbols=BTC,ETH&tf=1h", "symbols=BTC,ETH&tf=1h"],
  ["8 symbols, tf=4h", "symbols=BTC,ETH,SOL,BNB,XRP,ADA,DOGE,LINK&tf=4h"],
] as const) {
  const params = new URLSearchParams(query);
  const entries = (params.get("symbols") ?? "").split(",").map((symbol) => ({ ok: true, reason: "", symbol }));
  let sink = 0;
  const before = () => {
    sink +=
      normaliseSymbols(params.get("symbols") ?? undefined, 8).length +
      normaliseTimeframe(params.get("tf") ?? undefined).length;
  };
  const after = () => {
    const headers = new Headers();
    if ((query as string) !== "") for (const name of params.keys()) if (!FIELDS.has(name)) sink++;
    const read = readSignalsRequest(params.get("symbols") ?? undefined, params.get("tf") ?? undefined, 8);
    setCallWarnings(headers, read, entries);
    sink += read.symbols.length;
  };
  // The Headers object exists on every call anyway (the handler context's); made here for both.
  const beforeWithHeaders = () => {
    new Headers();
    before();
  };
  const b: number[] = [];
  const a: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    b.push(timeIt(beforeWithHeaders));
    a.push(timeIt(after));
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(
    `| ${label} | ${median(b).toFixed(0)} ns | ${median(a).toFixed(0)} ns ` +
      `| ${(median(a) - median(b)).toFixed(0)} ns |${sink > 0 ? "" : " "}`,
  );
}
