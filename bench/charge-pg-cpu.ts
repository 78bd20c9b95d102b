/**
 * `node bench/charge-pg-cpu.ts [groups] [group size]` (not in `npm run bench`): PostgreSQL's CPU
 * per billed call in the grouped charge statement, as the burst bench's callers send it (issue
 * 28, target 2). On a fresh database with 100 accounts and 400 coins, `groups` statements
 * (default 3,000) of `group size` calls (default 9, the burst's median group) on distinct
 * accounts, each call with the market versions of 8 coins (the `known` check), go through the
 * real `chargeBatch` on one connection; the backend's own CPU time (utime + stime of its
 * process, /proc/<pid>/stat) and the wall time are read around them. A second pass runs the
 * same number of statements without `known` (the check skipped), to show what the check costs.
 * Charges are checked against the ledger at the end.
 */
import postgres from "postgres";
import { hashApiKey } from "../src/accounts/api-key.ts";
import { chargeBatch } from "../src/billing/charge.ts";
import type { ChargeRequest } from "../src/billing/charge-statement.ts";
import { loadConfig } from "../src/config.ts";
import { migrateDb, openDb } from "../src/db/client.ts";
import { createAccounts, machineLine } from "./api.ts";
import { processCpuSeconds } from "./proc-cpu.ts";
import { benchDatabase } from "./server-process.ts";

const GROUPS = Number(process.argv[2] ?? 3000);
const GROUP = Number(process.argv[3] ?? 9);
const ACCOUNTS = 100;
const COINS = 400;

/** CPU seconds (user + system) the backend has used so far (bench/proc-cpu.ts). */
function cpuSeconds(pid: number): number {
  const seconds = processCpuSeconds(pid);
  if (seconds === null) throw new Error(`backend ${pid} is gone`);
  return seconds;
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  // One connection, so every statement runs in the backend whose CPU is read.
  const handle = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: 1 });
  try {
    await migrateDb(handle);
    const keys = (await createAccounts(database.url, ACCOUNTS)).map(hashApiKey);
    const limits = loadConfig({}).limits;
    await sql`INSERT INTO coins (symbol, base_tf, last_update_at, version)
              SELECT 'C' || g, '15m', now(), 1000 + g FROM generate_series(1, ${COINS}) g`;
    const versions = await sql<{ symbol: string; version: string }[]>`SELECT symbol, version::text FROM coins`;
    const byIndex = versions.map((v) => [v.symbol, Number(v.version)] as const);
    const [{ pid }] = (await handle.prepared<{ pid: number }>("SELECT pg_backend_pid() AS pid", [])) as [
      { pid: number },
    ];

    const pass = async (withKnown: boolean, from: number) => {
      const cpu0 = cpuSeconds(pid);
      const t0 = performance.now();
      for (let i = 0; i < GROUPS; i++) {
        const group: ChargeRequest[] = Array.from({ length: GROUP }, (_, j) => {
          const n = from + i * GROUP + j;
          const first = (n * 8) % COINS;
          const known = withKnown
            ? Object.fromEntries(Array.from({ length: 8 }, (_, c) => byIndex[(first + c) % COINS]!))
            : null;
          return { keyHash: keys[(i * GROUP + j) % ACCOUNTS]!, now: Date.now(), known };
        });
        const results = await chargeBatch(handle, group, limits);
        for (const r of results) if (r.outcome !== "ok") throw new Error(`charge refused: ${r.outcome}`);
      }
      const wall = performance.now() - t0;
      const cpu = cpuSeconds(pid) - cpu0;
      return { cpuPerCallUs: (cpu / (GROUPS * GROUP)) * 1e6, wallPerStatementMs: wall / GROUPS };
    };
    await pass(true, 0); // warm-up: plans cached, pages in shared buffers
    const known = await pass(true, GROUPS * GROUP);
    const bare = await pass(false, 2 * GROUPS * GROUP);
    const charged = Number(
      (await sql<{ n: string }[]>`SELECT count(*)::text AS n FROM ledger_entries WHERE kind = 'charge'`)[0]!.n,
    );
    if (charged !== 3 * GROUPS * GROUP) throw new Error(`${charged} charges in the ledger for ${3 * GROUPS * GROUP}`);
    console.log(`Machine: ${machineLine()}\n`);
    console.log(`${GROUPS} statements of ${GROUP} calls each pass, one connection, 400 coins, 100 accounts\n`);
    console.log("| pass | PostgreSQL CPU per billed call | wall per statement |");
    console.log("|---|---|---|");
    for (const [name, r] of [
      ["known versions of 8 coins (as the API sends)", known],
      ["no known versions", bare],
    ] as const)
      console.log(`| ${name} | **${r.cpuPerCallUs.toFixed(0)} µs** | ${r.wallPerStatementMs.toFixed(2)} ms |`);
  } finally {
    await handle.close();
    await sql.end();
    await database.drop();
  }
}

await main();
