/**
 * PostgreSQL CPU per charged call of the group statement, no HTTP: the per-call statement
 * (`charge_call` once per call, as before issue 16's set-based charge) against the product's
 * `charge_calls`, alternating, on the same fresh database. 8 clients send groups of
 * BENCH_GROUP (10) calls from 64 accounts, as the billed-calls benchmark's server does.
 *
 *   node bench/charge-db-cpu.ts      (PostgreSQL at BENCH_DATABASE_URL or 127.0.0.1:5432)
 */
import { benchDatabase } from "./server-process.ts";
import { trackPostgresCpu } from "./proc-cpu.ts";
import { openDb, migrateDb } from "../src/db/client.ts";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/accounts/accounts.ts";
import { adjustTokens } from "../src/billing/tokens.ts";
import { chargeBatch, uuidV7 } from "../src/billing/charge.ts";
import { chargeBatchStatement, type ChargeRequest } from "../src/billing/charge-statement.ts";
import { hashApiKey } from "../src/accounts/api-key.ts";

const GROUP = Number(process.env.BENCH_GROUP ?? 10);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);

/** The group statement before charge_calls (same attempt row), for comparison only. */
const PER_CALL_SQL = `
  WITH r AS MATERIALIZED (
    SELECT k.ord, c.*
      FROM unnest($1::text[], $2::timestamptz[], $3::date[], $4::date[]) WITH ORDINALITY AS k(key_hash, at, day, month, ord)
     CROSS JOIN LATERAL charge_call(k.key_hash, k.at, k.day, k.month, $5::integer, $6::bigint, $7::bigint) AS c),
  attempt AS (
    INSERT INTO charge_attempts (id, results) SELECT $8::uuid, jsonb_agg(to_jsonb(r) ORDER BY r.ord) FROM r)
  SELECT * FROM r ORDER BY ord`;

const database = await benchDatabase();
const name = new URL(database.url).pathname.slice(1);
const handle = await openDb({ databaseUrl: database.url, dataDir: "", poolSize: CLIENTS + 1 });
await migrateDb(handle);
const limits = { ...loadConfig({}).limits, dailyCap: 1_000_000_000 };
const keys: string[] = [];
for (let i = 0; i < 64; i++) {
  const { summary, apiKey } = await createAccount(handle, { email: `c${i}@example.test`, plan: "node", subscriptionUntil: new Date("2099-01-01T00:00:00Z") }, limits, Date.now());
  await adjustTokens(handle, summary.accountId, "pack", 100_000_000, "bench", limits);
  keys.push(hashApiKey(apiKey));
}

const perCall = async (requests: ChargeRequest[]) => {
  const sorted = [...requests].sort((a, b) => (a.keyHash < b.keyHash ? -1 : a.keyHash > b.keyHash ? 1 : 0));
  const { params } = chargeBatchStatement(sorted, limits, uuidV7());
  await handle.prepared(PER_CALL_SQL, params);
};
const setBased = async (requests: ChargeRequest[]) => {
  await chargeBatch(handle, requests, limits);
};

async function run(charge: (r: ChargeRequest[]) => Promise<void>): Promise<{ calls: number; cpuUs: number; rate: number }> {
  const cpu = trackPostgresCpu(name);
  const until = performance.now() + SECONDS * 1000;
  let calls = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        const now = Date.now();
        await charge(Array.from({ length: GROUP }, () => ({ keyHash: keys[Math.floor(Math.random() * keys.length)]!, now })));
        calls += GROUP;
      }
    }),
  );
  return { calls, cpuUs: (cpu.stop() / calls) * 1e6, rate: calls / SECONDS };
}

for (let round = 0; round < 3; round++) {
  for (const [label, charge] of [["per-call charge_call", perCall], ["set-based charge_calls", setBased]] as const) {
    const r = await run(charge);
    console.log(`${label}: ${r.rate.toFixed(0)} calls/s, PostgreSQL CPU ${r.cpuUs.toFixed(1)} µs per call`);
  }
}
await handle.close();
await database.drop();
