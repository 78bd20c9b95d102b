/**
 * Server CPU per billed call of two (or more) source trees, in turns in one run, against the
 * bare `node:http` server: one database, one server process per tree (each `src/main.ts` with
 * npm start's flags, `WORKERS` = BENCH_WORKERS, default 1), all up at once; then, round after
 * round, the open-loop generator drives the bare server and each tree's server in turn at the
 * same fixed rate, and each process's CPU time over its turn is divided by the 200s it
 * answered, beside the 200s per charge statement of the turn (the attempt rows it committed; a
 * statement per call is the low-rate regime). Turns close together in time see the same
 * machine, which is what makes an A/B on a loaded host readable (bench/api.ts measures one tree
 * per run).
 *
 *   node bench/cpu-ab.ts /path/to/tree-a /path/to/tree-b     (default: this tree alone)
 *   node bench/cpu-ab.ts . ".::--single-threaded-gc"          (a tree with V8 flags added after npm start's)
 *   node bench/cpu-ab.ts ".::::WORKERS=2" ".::::WORKERS=2 CHARGE_GROUP_WAIT_MS=10"
 *                                                             (a tree with environment of its own after "::::")
 *
 * A server with several workers also gets a row per process in each turn (primary, lead,
 * followers: CPU per call of the whole turn's 200s), to see where a second worker's cost goes.
 *
 * Environment: BENCH_ROUNDS (default 4), BENCH_OPEN_LOOP_SECONDS (default 6), BENCH_RATE
 * (default 1000), BENCH_WORKERS (default 1). Each tree needs its node_modules (a symlink to
 * this tree's does). Prints one Markdown row per turn and the medians.
 */

import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { createAccounts, machineLine, openLoop, pushCandles, QUERY, startBareServer, TOKEN } from "./api.ts";
import { processCpuSeconds, treeCpu } from "./proc-cpu.ts";
import { benchDatabase, startServerProcess } from "./server-process.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_OPEN_LOOP_SECONDS ?? 6);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const WORKERS = process.env.BENCH_WORKERS ?? "1";
const trees = process.argv.length > 2 ? process.argv.slice(2) : [process.cwd()];

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const database = await benchDatabase();
const db = postgres(database.url, { max: 1, onnotice: () => {} });

/** Charge statements committed so far (each writes one attempt row with its results). */
async function statements(): Promise<number> {
  const [row] = await db`SELECT count(*)::int AS n FROM charge_attempts WHERE results IS NOT NULL`;
  return (row as { n: number }).n;
}

/**
 * CPU microseconds per 200 of the process tree `pid` while the generator drives `url` once, the
 * kernel's share of them, and the 200s per charge statement (only one server runs at a time).
 */
async function turn(
  pid: number,
  url: string,
  keys?: string[],
  processes: number[] = [],
): Promise<{ us: number; kernel: number; p50: number; errors: number; perStatement: number; perProcess: number[] }> {
  const statementsBefore = keys ? await statements() : 0;
  const before = treeCpu(pid);
  const processesBefore = processes.map((p) => processCpuSeconds(p) ?? Number.NaN);
  const result = await openLoop({ url, rate: RATE, seconds: SECONDS, connections: 64, ...(keys ? { keys } : {}) });
  const after = treeCpu(pid);
  const processesAfter = processes.map((p) => processCpuSeconds(p) ?? Number.NaN);
  const cpu = after.cpuSeconds - before.cpuSeconds;
  const sent = keys ? (await statements()) - statementsBefore : 0;
  const ok = Math.max(1, result.ok);
  return {
    us: (1e6 * cpu) / ok,
    kernel: (after.systemSeconds - before.systemSeconds) / Math.max(cpu, 1e-9),
    p50: result.p50,
    errors: result.errors,
    perStatement: result.ok / Math.max(1, sent),
    perProcess: processes.map((_, i) => (1e6 * (processesAfter[i]! - processesBefore[i]!)) / ok),
  };
}

const percent = (share: number) => `${(100 * share).toFixed(0)} %`;

const children: ChildProcess[] = [];
const dir = mkdtempSync(path.join(tmpdir(), "signals-cpu-ab-"));
try {
  const env = {
    DATABASE_URL: database.url,
    INTERNAL_TOKEN: TOKEN,
    DAILY_CAP: "10000000",
    STALE_AFTER: "86400",
    WORKERS,
  };
  const servers = [];
  for (const tree of trees) {
    const [dir, flags = "", own = ""] = tree.split("::");
    // NAME=value words after a second "::": this tree's own environment (e.g. WORKERS=2).
    const ownEnv = Object.fromEntries(
      own
        .split(" ")
        .filter(Boolean)
        .map((word) => [word.slice(0, word.indexOf("=")), word.slice(word.indexOf("=") + 1)]),
    );
    const server = await startServerProcess({ ...env, ...ownEnv }, 60_000, flags.split(" ").filter(Boolean), dir);
    children.push(server.child);
    // With workers: the primary, then the lead, then the followers.
    const processes = server.workerPids.length > 0 ? [server.child.pid!, ...server.workerPids] : [];
    servers.push({ tree, server, processes });
  }
  const keys = await createAccounts(database.url, 64);
  for (const { server } of servers) await pushCandles(server.internalPort);
  const probe = await fetch(`http://127.0.0.1:${servers[0]!.server.port}${QUERY}`, {
    headers: { "x-api-key": keys[0]! },
  });
  const bodyFile = path.join(dir, "body.json");
  writeFileSync(bodyFile, await probe.text());
  const bare = await startBareServer(bodyFile);
  children.push(bare.child);
  // Warm-up: every server's code is optimised before the first measured turn.
  for (const { server } of servers) await turn(server.child.pid!, `http://127.0.0.1:${server.port}${QUERY}`, keys);
  const processNames = (n: number) => [
    "primary",
    "lead",
    ...Array.from({ length: n - 2 }, (_, i) => `follower #${i + 1}`),
  ];

  const figures = new Map<string, number[]>([["bare", []], ...trees.map((t): [string, number[]] => [t, []])]);
  const rows: string[] = [];
  const processRows: string[] = [];
  const idleRows: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // The billed servers sit idle while the bare one is driven: their fixed background work.
    const idleFrom = servers.map(({ server }) => treeCpu(server.child.pid!).cpuSeconds);
    const idleStart = performance.now();
    const b = await turn(bare.child.pid!, `http://127.0.0.1:${bare.port}${QUERY}`);
    figures.get("bare")!.push(b.us);
    const idleSeconds = (performance.now() - idleStart) / 1000;
    servers.forEach(({ tree, server }, i) => {
      const ms = (1000 * (treeCpu(server.child.pid!).cpuSeconds - idleFrom[i]!)) / idleSeconds;
      idleRows.push(`| ${round} | ${tree} | ${ms.toFixed(1)} ms/s |`);
    });
    for (const { tree, server, processes } of servers) {
      const t = await turn(server.child.pid!, `http://127.0.0.1:${server.port}${QUERY}`, keys, processes);
      figures.get(tree)!.push(t.us / b.us);
      rows.push(
        `| ${round} | ${tree} | ${loadavg()[0]!.toFixed(1)} | ${t.us.toFixed(0)} µs | ${percent(t.kernel)} | ` +
          `${b.us.toFixed(0)} µs | ${percent(b.kernel)} | ${(t.us / b.us).toFixed(2)} × | ${t.p50.toFixed(2)} ms | ` +
          `${t.perStatement.toFixed(2)} | ${t.errors} |`,
      );
      console.error(rows.at(-1));
      if (processes.length > 0) {
        const names = processNames(processes.length);
        const split = t.perProcess.map((us, i) => `${names[i]} ${us.toFixed(0)} µs`).join(", ");
        processRows.push(`| ${round} | ${tree} | ${split} |`);
        console.error(processRows.at(-1));
      }
    }
  }
  console.log(machineLine());
  console.log(`open loop ${RATE}/s, ${SECONDS}s a turn, WORKERS=${WORKERS}, ${ROUNDS} rounds`);
  console.log(
    [
      "| round | tree | load | server CPU per call | in kernel | bare, same round | in kernel | ratio | p50 | " +
        "calls per statement | errors |",
      "|---|---|---|---|---|---|---|---|---|---|---|",
      ...rows,
    ].join("\n"),
  );
  if (processRows.length > 0)
    console.log(
      ["\n| round | tree | CPU per call (of the turn's 200s) by process |", "|---|---|---|", ...processRows].join("\n"),
    );
  console.log(
    ["\n| round | tree | CPU while idle (the bare server's turn) |", "|---|---|---|", ...idleRows].join("\n"),
  );
  console.log(`\nmedian bare: ${median(figures.get("bare")!).toFixed(0)} µs`);
  for (const tree of trees) console.log(`median ratio ${tree}: ${median(figures.get(tree)!).toFixed(2)} ×`);
} finally {
  for (const child of children) child.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 500));
  await db.end();
  await database.drop();
}
