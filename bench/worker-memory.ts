/**
 * `node bench/worker-memory.ts <label=dir[|NAME:value,…][|flags]> …` (not in `npm run bench`):
 * each worker's memory holding 400 coins × 5 timeframes, for several source trees or settings in
 * turns in one run (A/B on a shared machine). Per variant: a server with WORKERS=2 on a fresh
 * PostgreSQL database, started as `npm start` starts it (plus the variant's environment and
 * V8 flags; NODE_DISABLE_COMPILE_CACHE:1 turns npm start's compile cache off), 400 coins × 100
 * closed 15m candles pushed to the lead's internal listener (as the burst bench's history), then
 * each worker serves what an operator's server serves (below), then each worker's lowest RSS over
 * 10 s of quiet and where it is (`/proc/<pid>/smaps`: the `node` binary's pages, the malloc heap,
 * other anonymous memory), and the primary's RSS.
 *
 * Served by every worker before the quiet (each request on fresh connections until the kernel's
 * socket table shows each worker answered it, test/support/socket-owners.ts): the landing page,
 * a chart page's sign-in redirect, the chart bundle, /docs, the OpenAPI document and paid calls;
 * and the lead delivers alerts (the last candle of each coin is pushed live, members follow
 * every coin, Telegram is the local fake). `--api-only` skips the pages, documents and alerts
 * (the figure before any page request, as measured before this option).
 * BENCH_ROUNDS (default 1) repeats the turns; BENCH_COINS (400) sets the coins.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import type { Candle } from "../src/engine/index.ts";
import { demoCandles } from "../src/market/demo-feed.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../test/support/fake-telegram.ts";
import { httpGet } from "../test/support/http-load.ts";
import { type CoinCandle, pushClosedCandles } from "../test/support/ingest-push.ts";
import { connectionOwners } from "../test/support/socket-owners.ts";
import { benchDatabase, internalAdminClient, rssMiB, startServerProcess } from "./server-process.ts";

const TOKEN = "bench-internal-token-0123456789";
const COINS = Number(process.env.BENCH_COINS ?? 400);
const CANDLES_PER_COIN = 100;
const QUIET_SAMPLES = 10;
const CANDLES_PER_PUSH = 5_000;
/** The contract's limits: coins per paid call, coins one member's alerts follow. */
const COINS_PER_CALL = 8;
const COINS_PER_MEMBER = 50;
const API_ONLY = process.argv.includes("--api-only");

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

const symbolOf = (c: number) => `C${String(c).padStart(3, "0")}`;

/**
 * 400 coins of the demo walk, each scaled, `CANDLES_PER_COIN` closed 15m candles ending before
 * now; the last candle of each coin comes apart (pushed live, so that it may alert).
 */
function history(): { backfill: CoinCandle[]; live: CoinCandle[] } {
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
      updates.push({ symbol: symbolOf(c), candle });
    });
  }
  const last = (u: CoinCandle) => u.candle.openTime === firstOpen + (CANDLES_PER_COIN - 1) * 900_000;
  // The live close moves far (up for half the coins, down for the others) so that signals change and alert.
  const live = updates.filter(last).map(({ symbol, candle }, c) => {
    const close = candle.open * (c % 2 === 0 ? 1.5 : 0.6);
    return {
      symbol,
      candle: { ...candle, close, high: Math.max(candle.open, close), low: Math.min(candle.open, close) },
    };
  });
  return { backfill: updates.filter((u) => !last(u)), live };
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

/** Members whose alerts follow every coin on 15m; their API keys. */
async function createMembers(internalPort: number): Promise<string[]> {
  const admin = internalAdminClient(internalPort, TOKEN);
  const keys: string[] = [];
  for (let first = 0; first < COINS; first += COINS_PER_MEMBER) {
    const created = await admin.createAccount({ email: `memory-member-${first}@example.test`, plan: "node" });
    const symbols = Array.from({ length: Math.min(COINS_PER_MEMBER, COINS - first) }, (_, k) => symbolOf(first + k));
    await admin.setAlerts({
      accountId: created.account!.accountId,
      alerts: { chatId: String(5_000 + first), symbols, timeframes: ["15m"] },
    });
    keys.push(created.apiKey);
  }
  return keys;
}

/**
 * GETs `path` on fresh connections, a few at a time, until the socket table shows every worker
 * answered it (the kernel, not the server, chooses a new connection's worker); throws on an
 * answer other than `status`.
 */
async function servedByEveryWorker(
  port: number,
  workerPids: number[],
  path: string,
  status: number,
  headers: Record<string, string> = {},
): Promise<void> {
  const served = new Set<number>();
  for (let attempt = 0; attempt < 50 && served.size < workerPids.length; attempt++) {
    const agents = Array.from({ length: 4 }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      const answers = await Promise.all(
        agents.map((agent) =>
          httpGet(`http://127.0.0.1:${port}${path}`, { "accept-encoding": "gzip", ...headers }, agent, 60_000),
        ),
      );
      for (const answer of answers)
        if (answer.status !== status) throw new Error(`GET ${path}: ${answer.status} ${answer.body.slice(0, 200)}`);
      const owners = await connectionOwners(port, workerPids);
      for (const answer of answers) {
        const pid = owners.get(answer.localPort!);
        if (pid !== undefined) served.add(pid);
      }
    } finally {
      for (const agent of agents) agent.destroy();
    }
  }
  if (served.size < workerPids.length) throw new Error(`GET ${path} did not reach every worker`);
}

/** What an operator's server serves: pages, the chart bundle, the API's documents, paid calls. */
async function serveWhatAServerServes(port: number, workerPids: number[], key: string): Promise<void> {
  const coins = Array.from({ length: COINS_PER_CALL }, (_, k) => symbolOf(k)).join(",");
  const requests: [path: string, status: number, headers?: Record<string, string>][] = [
    ["/", 200],
    ["/charts/C000?tf=15m", 303],
    ["/signin", 200],
    ["/track-record", 200],
    ["/assets/lightweight-charts.js", 200],
    ["/docs", 200],
    ["/api/v1/openapi.json", 200],
    [`/api/v1/signals?symbols=${coins}&tf=15m`, 200, { "x-api-key": key }],
  ];
  for (const [path, status, headers] of requests) await servedByEveryWorker(port, workerPids, path, status, headers);
}

/** Resolves once no alert has arrived for `quietMs` (at most `limitMs`); returns how many arrived. */
async function alertsSettled(telegram: FakeTelegram, quietMs: number, limitMs: number): Promise<number> {
  const start = Date.now();
  let seen = -1;
  while (Date.now() - start < limitMs && seen !== telegram.delivered.length) {
    seen = telegram.delivered.length;
    await new Promise((r) => setTimeout(r, quietMs));
  }
  return telegram.delivered.length;
}

async function measure(variant: Variant, updates: ReturnType<typeof history>): Promise<string[]> {
  const database = await benchDatabase();
  const telegram = await startFakeTelegram();
  const server = await startServerProcess(
    {
      DATABASE_URL: database.url,
      INTERNAL_TOKEN: TOKEN,
      WORKERS: "2",
      // The pushed closes may be up to 15 minutes old: they must still alert.
      ALERT_MAX_DELAY: String(24 * 3600),
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ...variant.env,
    },
    120_000,
    variant.flags,
    variant.dir,
  );
  try {
    const internalUrl = `http://127.0.0.1:${server.internalPort}`;
    const keys = API_ONLY ? [] : await createMembers(server.internalPort);
    const { backfill, live } = updates;
    for (let i = 0; i < backfill.length; i += CANDLES_PER_PUSH)
      await pushClosedCandles(internalUrl, TOKEN, "backfill", "15m", backfill.slice(i, i + CANDLES_PER_PUSH));
    let alerts = "";
    if (API_ONLY) await pushClosedCandles(internalUrl, TOKEN, "backfill", "15m", live);
    else {
      await pushClosedCandles(internalUrl, TOKEN, "live", "15m", live);
      await serveWhatAServerServes(server.port, server.workerPids, keys[0]!);
      alerts = `${await alertsSettled(telegram, 2_000, 60_000)} alerts delivered; `;
    }
    const lowest = new Map(server.workerPids.map((pid) => [pid, Infinity]));
    for (let i = 0; i < QUIET_SAMPLES; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      for (const pid of server.workerPids) lowest.set(pid, Math.min(lowest.get(pid)!, await rssMiB(pid)));
    }
    const rows = server.workerPids.map((pid, i) => {
      const role = i === 0 ? "lead" : "follower";
      const notes = `${i === 0 ? alerts : ""}${residentParts(pid)}`;
      return `| ${variant.label} | ${role} | **${lowest.get(pid)!.toFixed(1)}** | ${notes} |`;
    });
    rows.push(`| ${variant.label} | primary | ${(await rssMiB(server.child.pid!)).toFixed(1)} | |`);
    return rows;
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    await telegram.close();
    await database.drop();
  }
}

const variants = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith("--"))
  .map(parseVariant);
if (variants.length === 0) throw new Error("usage: node bench/worker-memory.ts label=dir[|NAME:value,…][|flags] …");
const updates = history();
console.log("| variant | process | RSS steady, MiB | resident parts, MiB |\n|---|---|---|---|");
for (let round = 0; round < Number(process.env.BENCH_ROUNDS ?? 1); round++)
  for (const variant of variants) for (const row of await measure(variant, updates)) console.log(row);
