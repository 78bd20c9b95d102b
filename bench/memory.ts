/**
 * Memory of a server holding 500 coins × 5 timeframes: a real server process on Postgres
 * receives 500 coins of synthetic 15m candles (so 15m, 30m, 1h, 4h and 1d are all live)
 * through the internal gRPC IngestService; its RSS is read beside the same process idle.
 * Target (issue 16, item 5): under 150 MiB RSS steady; exits non-zero when missed.
 */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { IngestService, PushCandlesRequestSchema } from "../gen/signals/v1/ingest_pb.js";
import { demoCandles } from "../src/market/demo-feed.ts";
import { benchDatabase, npmStartFlags, rssMiB, startServerProcess } from "./server-process.ts";

const COINS = 500;
const CANDLES_PER_COIN = 200;
const TOKEN = "bench-internal-token-0123456789";
const TARGET_MIB = 150;

/**
 * The server's V8 heap (used / total) and external memory in MiB, from its /metrics (prom-client's default metrics).
 */
async function heapFigures(internalPort: number): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${internalPort}/metrics`)).text();
  const mib = (name: string) =>
    (Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1] ?? NaN) / 2 ** 20).toFixed(0);
  return (
    `heap ${mib("nodejs_heap_size_used_bytes")} used / ${mib("nodejs_heap_size_total_bytes")} ` +
    `total, external ${mib("nodejs_external_memory_bytes")} MiB`
  );
}

/** Runs the memory benchmark; returns a Markdown table. */
export async function benchMemory(): Promise<string> {
  const database = await benchDatabase();
  const server = await startServerProcess({ DATABASE_URL: database.url, INTERNAL_TOKEN: TOKEN });
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const idle = await rssMiB(server.child.pid!);
    const idleHeap = await heapFigures(server.internalPort);
    const client = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.internalPort}` }),
    );
    const template = demoCandles("BTC", CANDLES_PER_COIN);
    const started = performance.now();
    let accepted = 0;
    for (let batch = 0; batch < COINS; batch += 50) {
      async function* updates() {
        for (let c = batch; c < Math.min(COINS, batch + 50); c++) {
          const symbol = `C${String(c).padStart(3, "0")}`;
          const scale = 1 + c / 100;
          for (const k of template) {
            yield create(PushCandlesRequestSchema, {
              symbol,
              tf: "15m",
              openTime: BigInt(
                Date.now() -
                  (Date.now() % 900_000) -
                  (CANDLES_PER_COIN - (k.openTime - template[0]!.openTime) / 900_000) * 900_000,
              ),
              open: k.open * scale,
              high: k.high * scale,
              low: k.low * scale,
              close: k.close * scale,
              volume: k.volume,
              closed: true,
            });
          }
        }
      }
      const res = await client.pushCandles(updates(), { headers: { authorization: `Bearer ${TOKEN}` } });
      accepted += Number(res.accepted);
    }
    const seconds = (performance.now() - started) / 1000;
    // Steady state: V8's memory reducer runs a few seconds after a burst of allocation, so the
    // figure is the lowest of samples taken over 10 s of quiet (the state itself stays loaded).
    let loaded = Infinity;
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      loaded = Math.min(loaded, await rssMiB(server.child.pid!));
    }
    const loadedHeap = await heapFigures(server.internalPort);
    const ok = loaded < TARGET_MIB;
    if (!ok) process.exitCode = 1;
    return (
      [
        `| measure | value | target |`,
        `|---|---|---|`,
        `| server flags | \`${npmStartFlags().join(" ")}\` (npm start's) | |`,
        `| coins × timeframes held | ${COINS} × 5 (15m base; 30m, 1h, 4h, 1d derived) | 500 × 5 |`,
        `| candles pushed over gRPC | ${accepted} in ${seconds.toFixed(1)} s | |`,
        `| server RSS idle (baseline) | ${idle.toFixed(0)} MiB (${idleHeap}) | |`,
        `| server RSS holding 500 × 5 (steady, lowest over 10 s quiet) | **${loaded.toFixed(0)} MiB** ` +
          `(${(loaded / TARGET_MIB).toFixed(2)} × target; ${loadedHeap}) | < ${TARGET_MIB} MiB ${ok ? "✔" : "✘"} |`,
      ].join("\n") + (ok ? "" : "\n\n**Target missed.**")
    );
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1000));
    await database.drop();
  }
}

if (import.meta.main) console.log(await benchMemory()); // process.exitCode is 1 when the target is missed
