/**
 * Billed REST throughput: wrk drives GET /api/v1/signals (8 coins) at 64 connections against a
 * real server on real Postgres, beside a same-run baseline of the database's own
 * one-statement `UPDATE … RETURNING` commit rate measured with pgbench at 64 clients.
 *
 *   npm run bench            (needs PostgreSQL at BENCH_DATABASE_URL or 127.0.0.1:5432, wrk, pgbench)
 *
 * Both sides spread their writes over 64 rows/accounts, so neither is measuring one hot row.
 */
import { execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { startServerProcess } from "./server-process.ts";
import { openDb } from "../src/db/client.ts";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/accounts/accounts.ts";
import { adjustTokens } from "../src/billing/tokens.ts";

const BASE_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CONNECTIONS = 64;
const ACCOUNTS = 64;
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 15);
const QUERY = "/api/v1/signals?symbols=BTC,ETH,SOL,BNB,XRP,ADA,DOGE,DOT&tf=1h";

function withDb(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = "/" + name;
  return u.toString();
}

function pgbenchBaseline(dbUrl: string, dir: string): number {
  const admin = new URL(dbUrl);
  const script = path.join(dir, "update-returning.sql");
  writeFileSync(script, "\\set id random(1, 64)\nUPDATE bench_balance SET n = n - 1 WHERE id = :id RETURNING n;\n");
  const args = ["-h", admin.hostname, "-p", admin.port || "5432", "-U", admin.username || "postgres", "-n", "-c", String(CONNECTIONS), "-j", "2", "-T", String(DURATION_S), "-f", script, admin.pathname.slice(1)];
  const out = execFileSync("pgbench", args, { encoding: "utf8" });
  const tps = /tps = ([\d.]+)/.exec(out);
  if (!tps) throw new Error("could not read pgbench output:\n" + out);
  return Number(tps[1]);
}

/** Creates the benchmark accounts directly in the database (setup is not measured). */
async function createAccounts(dbUrl: string, count: number): Promise<string[]> {
  const handle = await openDb({ databaseUrl: dbUrl, dataDir: "", poolSize: 2 });
  const limits = loadConfig({}).limits;
  const keys: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const { summary, apiKey } = await createAccount(handle, { email: `bench${i}@example.test`, plan: "node", subscriptionUntil: new Date("2099-01-01T00:00:00Z") }, limits, Date.now());
      await adjustTokens(handle, summary.accountId, "pack", 10_000_000, "benchmark pack", limits);
      keys.push(apiKey);
    }
  } finally {
    await handle.close();
  }
  return keys;
}

interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  requests: number;
  errors: number;
}

function parseLatency(text: string, pct: string): number {
  const m = new RegExp(`${pct}%\\s+([\\d.]+)(us|ms|s)`).exec(text);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
}

function runWrk(port: number, keys: string[], dir: string): WrkResult {
  const lua = path.join(dir, "keys.lua");
  writeFileSync(
    lua,
    `local keys = {${keys.map((k) => `"${k}"`).join(",")}}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", "${QUERY}", { ["x-api-key"] = keys[(i % #keys) + 1] })
end
`,
  );
  // Warm-up (JIT, pool connections, prepared statements), not measured.
  execFileSync("wrk", ["-t", "2", "-c", String(CONNECTIONS), "-d", "3s", "-s", lua, `http://127.0.0.1:${port}`], { encoding: "utf8" });
  const out = execFileSync("wrk", ["-t", "2", "-c", String(CONNECTIONS), "-d", `${DURATION_S}s`, "--latency", "-s", lua, `http://127.0.0.1:${port}`], { encoding: "utf8" });
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const sockErr = socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    p50ms: parseLatency(out, "50"),
    p99ms: parseLatency(out, "99"),
    requests,
    errors: non2xx + sockErr,
  };
}

/** Runs the API benchmark and returns a Markdown table row set. */
export async function benchApi(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "signals-bench-"));
  const name = `signals_bench_${randomBytes(4).toString("hex")}`;
  const admin = postgres(withDb(BASE_URL, "postgres"), { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const dbUrl = withDb(BASE_URL, name);
  const db = postgres(dbUrl, { max: 1, onnotice: () => {} });
  let server: ChildProcess | undefined;
  try {
    await db.unsafe("CREATE TABLE bench_balance (id int PRIMARY KEY, n bigint NOT NULL)");
    await db.unsafe("INSERT INTO bench_balance SELECT g, 1000000000 FROM generate_series(1, 64) g");
    console.log(`baseline: pgbench UPDATE … RETURNING, ${CONNECTIONS} clients, ${DURATION_S}s …`);
    const baselineTps = pgbenchBaseline(dbUrl, dir);

    const started = await startServerProcess({ DATABASE_URL: dbUrl, INTERNAL_TOKEN: "bench-internal-token-0123456789", DAILY_CAP: "10000000" });
    server = started.child;
    const keys = await createAccounts(dbUrl, ACCOUNTS);
    console.log(`billed REST calls: wrk, ${CONNECTIONS} connections, ${ACCOUNTS} accounts, 8 coins, ${DURATION_S}s …`);
    const result = runWrk(started.port, keys, dir);
    const [charges] = await db`SELECT count(*)::int AS n FROM ledger_entries WHERE kind = 'charge'`;
    const ratio = result.rps / baselineTps;
    const lines = [
      `| measure | value | target |`,
      `|---|---|---|`,
      `| pgbench UPDATE … RETURNING (64 clients) | ${baselineTps.toFixed(0)} tps | baseline |`,
      `| billed REST calls, 8 coins (64 connections) | ${result.rps.toFixed(0)} req/s | ≥ 0.5 × baseline |`,
      `| ratio to baseline | ${ratio.toFixed(2)} × | ≥ 0.50 |`,
      `| p50 latency | ${result.p50ms.toFixed(2)} ms | |`,
      `| p99 latency | ${result.p99ms.toFixed(2)} ms | < 25 ms |`,
      `| requests / errors (non-2xx + socket) | ${result.requests} / ${result.errors} | 0 errors |`,
      `| ledger charge rows written (warm-up + measured) | ${charges!.n} | ≥ measured 200 responses |`,
    ];
    return lines.join("\n");
  } finally {
    server?.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    await db.end();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** One line describing the machine, for the recorded results. */
export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  return `${cpus().length} × ${cpu}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
}

if (import.meta.main) {
  console.log(machineLine());
  console.log(await benchApi());
}
