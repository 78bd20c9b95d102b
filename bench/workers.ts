/**
 * Scaling with WORKERS (issue 16, item 2): billed REST calls per second with one server
 * process and with two worker processes on one port, same database, same load, same run.
 *
 *   npm run bench -- workers     (or: node bench/workers.ts [rounds]; Postgres at
 *                                 BENCH_DATABASE_URL or 127.0.0.1:5432, and wrk)
 *
 * wrk: 64 connections rotating 64 accounts' keys, GET /api/v1/signals with 8 coins (1 Token a
 * call), 3 s warm-up then BENCH_SECONDS (default 10) measured. The rounds alternate
 * (1, 2, 1, 2 …) so drift in a shared machine's speed hits both settings alike; the table gives
 * every round and the median of each setting.
 */
import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { createAccounts, machineLine, wrk, wrkScript } from "./api.ts";
import { benchDatabase, startServerProcess } from "./server-process.ts";

/** wrk's connections (bench/api.ts), one account each. */
const CONNECTIONS = 64;
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);

interface Round {
  workers: number;
  rps: number;
  non2xx: number;
  charges: number;
  load: string;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Runs `rounds` alternating pairs (WORKERS=1, WORKERS=2) and returns a Markdown table. */
export async function benchWorkers(rounds = 2): Promise<string> {
  const db = await benchDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), "signals-workers-bench-"));
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const results: Round[] = [];
  try {
    // The first server migrates the empty database; the accounts follow.
    const first = await startServerProcess({ DATABASE_URL: db.url });
    first.child.kill("SIGTERM");
    await new Promise((r) => first.child.once("exit", r));
    const script = wrkScript(dir, await createAccounts(db.url, CONNECTIONS));
    for (let round = 0; round < rounds; round++) {
      for (const workers of [1, 2]) {
        const server = await startServerProcess({
          DATABASE_URL: db.url,
          WORKERS: String(workers),
          INTERNAL_TOKEN: "bench-internal-token-0123456789",
          DAILY_CAP: "10000000",
        });
        try {
          await wrk(server.port, script, 3);
          const [before] = await sql<
            { n: number }[]
          >`SELECT count(*)::int AS n FROM ledger_entries WHERE kind = 'charge'`;
          const load = loadavg()[0]!.toFixed(1);
          const measured = await wrk(server.port, script, DURATION_S);
          const [after] = await sql<
            { n: number }[]
          >`SELECT count(*)::int AS n FROM ledger_entries WHERE kind = 'charge'`;
          results.push({ workers, rps: measured.rps, non2xx: measured.errors, charges: after!.n - before!.n, load });
          console.log(`WORKERS=${workers}: ${measured.rps.toFixed(0)} req/s (load average ${load})`);
        } finally {
          server.child.kill("SIGTERM");
          await new Promise((r) => server.child.once("exit", r));
        }
      }
    }
  } finally {
    await sql.end();
    await db.drop();
  }
  const one = median(results.filter((r) => r.workers === 1).map((r) => r.rps));
  const two = median(results.filter((r) => r.workers === 2).map((r) => r.rps));
  return [
    `| round | WORKERS | billed req/s | errors (non-2xx + socket) | ` +
      `charges in the measured window | 1-min load average at start |`,
    `|---|---|---|---|---|---|`,
    ...results.map(
      (r, i) =>
        `| ${Math.floor(i / 2) + 1} | ${r.workers} | ${r.rps.toFixed(0)} | ${r.non2xx} | ${r.charges} | ${r.load} |`,
    ),
    "",
    `Median: WORKERS=1 ${one.toFixed(0)} req/s, WORKERS=2 ${two.toFixed(0)} req/s: **${(two / one).toFixed(2)} ×**.`,
  ].join("\n");
}

if (import.meta.main) {
  console.log(machineLine());
  console.log(await benchWorkers(Number(process.argv[2] ?? 2)));
}
