/**
 * `node bench/worker-memory.ts <label=dir[|NAME:value,…][|flags]> …` (not in `npm run bench`):
 * each worker's memory holding 400 coins × 5 timeframes, for several source trees or settings in
 * turns in one run (A/B on a shared machine). Per variant: a server with WORKERS=2 on a fresh
 * PostgreSQL database, started as `npm start` starts it (plus the variant's environment and
 * V8 flags; NODE_DISABLE_COMPILE_CACHE:1 turns npm start's compile cache off), 400 coins × 100
 * closed 15m candles pushed to the lead's internal listener (as the burst bench's history), then
 * each worker's lowest RSS over 10 s of quiet and where it is (`/proc/<pid>/smaps`: the `node`
 * binary's pages, the malloc heap, other anonymous memory), and the primary's RSS.
 * BENCH_ROUNDS (default 1) repeats the turns; BENCH_COINS (400) sets the coins.
 */
import { readFileSync } from "node:fs";
import type { Candle } from "../src/engine/index.ts";
import { demoCandles } from "../src/market/demo-feed.ts";
import { type CoinCandle, pushClosedCandles } from "../test/support/ingest-push.ts";
import { benchDatabase, rssMiB, startServerProcess } from "./server-process.ts";

const TOKEN = "bench-internal-token-0123456789";
const COINS = Number(process.env.BENCH_COINS ?? 400);
const CANDLES_PER_COIN = 100;
const QUIET_SAMPLES = 10;
const CANDLES_PER_PUSH = 5_000;

interface Variant {
  label: string;
  dir: string;
  env: Record<string, string>;
  flags: string[];
}

/** `label=dir|NAME:value,NAME:value|--flag --flag` (the last two parts optional). */
function parseVariant(spec: string): Variant {
  const [label, rest = ""] = spec.split(/=(.*)/s, 2) as [string, string?];
  const [dir = "", envText = "", flagText = ""] = rest.split("|");
  const env = Object.fromEntries(
    envText
      .split(",")
      .filter(Boolean)
      .map((pair) => pair.split(/:(.*)/s, 2) as [string, string]),
  );
  return { label, dir, env, flags: flagText.split(/\s+/).filter(Boolean) };
}

/** 400 coins of the demo walk, each scaled, `CANDLES_PER_COIN` closed 15m candles ending before now. */
function history(): CoinCandle[] {
  const template = demoCandles("BTC", CANDLES_PER_COIN);
  const firstOpen = Date.now() - (Date.now() % 900_000) - CANDLES_PER_COIN * 900_000;
  const updates: CoinCandle[] = [];
  for (let c = 0; c < COINS; c++) {
    const scale = 1 + c / 100;
    template.forEach((k, i) => {
      const candle: Candle = {
        ...k,
        openTime: firstOpen + i * 900_000,
        open: k.open * scale,
        high: k.high * scale,
        low: k.low * scale,
        close: k.close * scale,
      };
      updates.push({ symbol: `C${String(c).padStart(3, "0")}`, candle });
    });
  }
  return updates;
}

/** Resident MiB of a process by kind of mapping (`node` binary, malloc heap, other anonymous memory). */
function residentParts(pid: number): string {
  const parts = new Map<string, number>();
  let kind = "";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) {
      const name = mapping[1]!;
      kind = name.endsWith("/node")
        ? "node binary"
        : name === ""
          ? "anonymous"
          : name === "[heap]"
            ? "malloc heap"
            : "";
      continue;
    }
    const rss = /^Rss:\s+(\d+)/.exec(line);
    if (rss && kind) parts.set(kind, (parts.get(kind) ?? 0) + Number(rss[1]) / 1024);
  }
  return [...parts].map(([name, mib]) => `${name} ${mib.toFixed(1)}`).join(", ");
}

async function measure(variant: Variant, updates: readonly CoinCandle[]): Promise<string[]> {
  const database = await benchDatabase();
  const server = await startServerProcess(
    { DATABASE_URL: database.url, INTERNAL_TOKEN: TOKEN, WORKERS: "2", ...variant.env },
    120_000,
    variant.flags,
    variant.dir,
  );
  try {
    const internalUrl = `http://127.0.0.1:${server.internalPort}`;
    for (let i = 0; i < updates.length; i += CANDLES_PER_PUSH)
      await pushClosedCandles(internalUrl, TOKEN, "backfill", "15m", updates.slice(i, i + CANDLES_PER_PUSH));
    const lowest = new Map(server.workerPids.map((pid) => [pid, Infinity]));
    for (let i = 0; i < QUIET_SAMPLES; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      for (const pid of server.workerPids) lowest.set(pid, Math.min(lowest.get(pid)!, await rssMiB(pid)));
    }
    const rows = server.workerPids.map((pid, i) => {
      const role = i === 0 ? "lead" : "follower";
      return `| ${variant.label} | ${role} | **${lowest.get(pid)!.toFixed(1)}** | ${residentParts(pid)} |`;
    });
    rows.push(`| ${variant.label} | primary | ${(await rssMiB(server.child.pid!)).toFixed(1)} | |`);
    return rows;
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    await database.drop();
  }
}

const variants = process.argv.slice(2).map(parseVariant);
if (variants.length === 0) throw new Error("usage: node bench/worker-memory.ts label=dir[|NAME:value,…][|flags] …");
const updates = history();
console.log("| variant | process | RSS steady, MiB | resident parts, MiB |\n|---|---|---|---|");
for (let round = 0; round < Number(process.env.BENCH_ROUNDS ?? 1); round++)
  for (const variant of variants) for (const row of await measure(variant, updates)) console.log(row);
