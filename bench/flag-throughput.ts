/**
 * Does a V8 flag that saves memory cost throughput? (issue 16, item 5.) One database, one
 * server process (WORKERS=1) per flag set, taken in turns A, B, A, B… in the same run: each
 * gets the benchmark accounts' keys, 8 coins of readings, a 3 s wrk warm-up and then
 * BENCH_SECONDS (default 10) of wrk on the billed call (64 connections), and its RSS after.
 *
 *   node bench/flag-throughput.ts "" "--optimize-for-size" [more flag sets…]
 *
 * Each argument is a space-separated list of flags added after `npm start`'s own (from
 * package.json); "" is `npm start` as it is. BENCH_ROUNDS (default 2) turns per flag set.
 */
import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { createAccounts, machineLine, pushCandles, wrk, wrkScript } from "./api.ts";
import { benchDatabase, npmStartFlags, rssMiB, startServerProcess } from "./server-process.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const TOKEN = "bench-internal-token-0123456789";

const flagSets = process.argv.slice(2).map((a) => a.split(/\s+/).filter(Boolean));
if (flagSets.length === 0) flagSets.push([], ["--optimize-for-size"]);

const database = await benchDatabase();
const dir = mkdtempSync(path.join(tmpdir(), "signals-flags-"));
const rows: string[] = [];
try {
  let lua = ""; // the accounts are made once the first server has migrated the database
  for (let round = 1; round <= ROUNDS; round++) {
    for (const flags of flagSets) {
      const server = await startServerProcess(
        {
          DATABASE_URL: database.url,
          INTERNAL_TOKEN: TOKEN,
          DAILY_CAP: "10000000",
          STALE_AFTER: "86400",
          WORKERS: "1",
        },
        60_000,
        flags,
      );
      try {
        lua ||= wrkScript(dir, await createAccounts(database.url, 64));
        await pushCandles(server.internalPort);
        await wrk(server.port, lua, 3);
        const load = loadavg()[0]!.toFixed(1);
        const r = await wrk(server.port, lua, SECONDS);
        const rss = await rssMiB(server.child.pid!);
        rows.push(
          `| ${round} | \`${[...npmStartFlags(), ...flags].join(" ")}\` | ${load} | ${r.rps.toFixed(0)} ` +
            `| ${r.p50ms.toFixed(1)} / ${r.p99ms.toFixed(1)} ms | ${r.errors} | ${rss.toFixed(0)} MiB |`,
        );
        console.error(rows.at(-1));
      } finally {
        server.child.kill("SIGTERM");
        await new Promise((r) => server.child.once("exit", r));
      }
    }
  }
} finally {
  await database.drop();
}
console.log(machineLine());
console.log(
  [
    "| round | server flags | load avg | billed calls/s | p50 / p99 | errors | RSS after |",
    "|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n"),
);
