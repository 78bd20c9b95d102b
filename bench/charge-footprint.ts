/**
 * `node bench/charge-footprint.ts [calls]` (not in `npm run bench`): what one billed call leaves
 * in PostgreSQL, for the capacity figures of docs/scaling.md. On a fresh database with 64
 * accounts, `calls` charges (default 20,000) go through the real grouped charge
 * (`chargeBatch`, groups of 6 as measured under load in the API benchmark) and, in the same run
 * on the same server, the same number of pgbench-style `UPDATE … RETURNING` transactions on a
 * 64-row table (the API benchmark's baseline). Prints the WAL each statement writes (its own
 * records, full-page images and bytes from `EXPLAIN (ANALYZE, WAL)`, which runs it: the cluster's
 * WAL position would count other databases' writes on a shared server; commit records are
 * not included) and the bytes the ledger and the attempt fence grow by per call (table and
 * indexes, after a VACUUM so free space is not counted as growth).
 */
import postgres from "postgres";
import { hashApiKey } from "../src/accounts/api-key.ts";
import { uuidV7 } from "../src/billing/charge.ts";
import { chargeBatchStatement } from "../src/billing/charge-statement.ts";
import { loadConfig } from "../src/config.ts";
import { migrateDb, openDb } from "../src/db/client.ts";
import { createAccounts, machineLine } from "./api.ts";
import { benchDatabase } from "./server-process.ts";

const CALLS = Number(process.argv[2] ?? 20_000);
const GROUP = 6;
const ACCOUNTS = 64;

async function main(): Promise<void> {
  const database = await benchDatabase();
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const handle = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: 4 });
  try {
    await migrateDb(handle);
    const keys = (await createAccounts(database.url, ACCOUNTS)).map(hashApiKey);
    const limits = loadConfig({}).limits;
    await sql`CREATE TABLE bench_balance (id int PRIMARY KEY, n bigint NOT NULL)`;
    await sql`INSERT INTO bench_balance SELECT g, 1000000000 FROM generate_series(1, ${ACCOUNTS}) g`;

    interface Wal {
      records: number;
      fpi: number;
      bytes: number;
    }
    const wal: Record<"charge" | "update", Wal> = {
      charge: { records: 0, fpi: 0, bytes: 0 },
      update: { records: 0, fpi: 0, bytes: 0 },
    };
    const count = (into: Wal, explained: unknown) => {
      const plan = (Array.isArray(explained) ? explained : JSON.parse(String(explained)))[0].Plan as Record<
        string,
        number
      >;
      into.records += plan["WAL Records"] ?? 0;
      into.fpi += plan["WAL FPI"] ?? 0;
      into.bytes += plan["WAL Bytes"] ?? 0;
    };
    const size = async (table: string) => {
      await sql.unsafe(`VACUUM ${table}`);
      return Number((await sql<{ s: string }[]>`SELECT pg_total_relation_size(${table}::regclass)::text AS s`)[0]!.s);
    };
    const tables = ["ledger_entries", "accounts", "charge_attempts"];
    const before = Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await size(t)] as const)));

    // The billed path: groups of GROUP calls on distinct accounts, one statement (one commit) each.
    let charged = 0;
    const started = performance.now();
    for (let i = 0; i < CALLS; i += GROUP) {
      const group = Array.from({ length: Math.min(GROUP, CALLS - i) }, (_, j) => ({
        keyHash: keys[(i + j) % ACCOUNTS]!,
        now: Date.now(),
      })).sort((a, b) => (a.keyHash < b.keyHash ? -1 : 1));
      // The grouped statement exactly as chargeBatch sends it, run under EXPLAIN to read its WAL.
      const statement = chargeBatchStatement(group, limits, uuidV7());
      const [plan] = await handle.prepared<{ "QUERY PLAN": unknown }>(
        `EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${statement.text}`,
        statement.params,
      );
      count(wal.charge, plan!["QUERY PLAN"]);
      charged += group.length;
    }
    const chargeMs = performance.now() - started;
    const ok = Number(
      (await sql<{ n: string }[]>`SELECT count(*)::text AS n FROM ledger_entries WHERE kind = 'charge'`)[0]!.n,
    );
    if (ok !== charged) throw new Error(`${ok} charges in the ledger for ${charged} calls`);
    const after = Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await size(t)] as const)));

    // The baseline: one single-row UPDATE … RETURNING per transaction.
    for (let i = 0; i < CALLS; i++) {
      const [plan] = await sql<
        { "QUERY PLAN": unknown }[]
      >`EXPLAIN (ANALYZE, WAL, FORMAT JSON) UPDATE bench_balance SET n = n - 1 WHERE id = ${(i % ACCOUNTS) + 1}
        RETURNING n`;
      count(wal.update, plan!["QUERY PLAN"]);
    }

    const perCall = (bytes: number) => (bytes / charged).toFixed(0);
    const per = (w: Wal, n: number) =>
      `${(w.records / n).toFixed(1)} records, ${(w.fpi / n).toFixed(2)} ` +
      `full-page images, **${(w.bytes / n).toFixed(0)} bytes**`;
    console.log(`Machine: ${machineLine()}\n`);
    console.log(
      `${charged} calls charged in groups of ${GROUP} (${((charged / chargeMs) * 1000).toFixed(0)} ` +
        `calls/s, one client); ${CALLS} baseline updates\n`,
    );
    console.log("| measure | per billed call | per baseline UPDATE transaction |");
    console.log("|---|---|---|");
    console.log(`| WAL written by the statement | ${per(wal.charge, charged)} | ${per(wal.update, CALLS)} |`);
    for (const t of tables)
      console.log(`| \`${t}\` growth (table + indexes, bytes) | ${perCall(after[t]! - before[t]!)} | |`);
  } finally {
    await handle.close();
    await sql.end();
    await database.drop();
  }
}

await main();
