/**
 * One-client latency of the grouped charge statement with one call in its group, beside the
 * baseline one-statement update, no HTTP (how much of a billed call's latency is the database):
 *
 *   node bench/charge-latency.ts      (PostgreSQL at BENCH_DATABASE_URL or 127.0.0.1:5432)
 */
import postgres from "postgres";
import { createAccount } from "../src/accounts/accounts.ts";
import { hashApiKey } from "../src/accounts/api-key.ts";
import { chargeBatch } from "../src/billing/charge.ts";
import { adjustTokens } from "../src/billing/tokens.ts";
import { loadConfig } from "../src/config.ts";
import { migrateDb, openDb } from "../src/db/client.ts";
import { benchDatabase } from "./server-process.ts";

const database = await benchDatabase();
const handle = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: 2 });
await migrateDb(handle);
const limits = loadConfig({}).limits;
const { summary, apiKey } = await createAccount(
  handle,
  { email: "l@example.test", plan: "node", subscriptionUntil: new Date("2099-01-01T00:00:00Z") },
  limits,
  Date.now(),
);
await adjustTokens(handle, summary.accountId, "pack", 1_000_000, "x", limits);
const sql = postgres(database.url, { max: 1 });
await sql.unsafe("CREATE TABLE b (id int PRIMARY KEY, n bigint)");
await sql.unsafe("INSERT INTO b VALUES (1, 0)");
const keyHash = hashApiKey(apiKey);
const latencies = (ms: number[]) => {
  ms.sort((x, y) => x - y);
  return `p50 ${ms[ms.length >> 1]!.toFixed(2)} ms, p99 ${ms[Math.floor(ms.length * 0.99)]!.toFixed(2)} ms`;
};
for (let round = 0; round < 2; round++) {
  const charge: number[] = [];
  const update: number[] = [];
  // Alternating, so both see the same moments of a shared machine.
  for (let i = 0; i < 300; i++) {
    let started = performance.now();
    await chargeBatch(handle, [{ keyHash, now: Date.now() }], limits);
    charge.push(performance.now() - started);
    started = performance.now();
    await sql.unsafe("UPDATE b SET n = n - 1 WHERE id = $1 RETURNING n", [1], { prepare: true });
    update.push(performance.now() - started);
  }
  console.log(`charge statement (1 call): ${latencies(charge)} | baseline UPDATE … RETURNING: ${latencies(update)}`);
}
await sql.end();
await handle.close();
await database.drop();
