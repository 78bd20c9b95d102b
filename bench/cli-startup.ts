/**
 * CLI start-up (issue 16): wall time of `signals account show --account 1 --json` as a child
 * process, from spawn to exit, beside `node -e 0` with the same binary in the same run.
 *
 *   npm run bench -- cli          (or: node bench/cli-startup.ts [runs] [other/src/cli/bin.ts];
 *                                  Postgres at BENCH_DATABASE_URL or 127.0.0.1:5432)
 *
 * A second bin.ts (another checkout, e.g. an export of the commit before a change) is timed in
 * the same run against the same server and database, for a before/after on a busy machine.
 *
 *  - embedded: a server started by the bench holds a temporary DATA_DIR; the CLI finds its lock
 *    and internal token and calls AdminService over the internal listener.
 *  - postgres: a fresh database created (and dropped) by the bench; the CLI opens it directly.
 *
 * The runs alternate (baseline, embedded, postgres, baseline, …) so that drift in the machine's
 * speed hits all three alike.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { machineLine } from "./api.ts";
import { benchDatabase, startServerProcess } from "./server-process.ts";

const BIN = path.resolve(import.meta.dirname, "../src/cli/bin.ts");
const TOKEN = "bench-internal-token-0123456789";

/** Runs the CLI once; returns wall milliseconds, throws on a non-zero exit. */
function timeRun(args: string[], env: Record<string, string>): number {
  const started = performance.now();
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, encoding: "utf8" });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stdout}${r.stderr}`);
  return ms;
}

function stats(values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const f = (v: number) => v.toFixed(0);
  return `${f(s[0]!)} | **${f(s[Math.floor(s.length / 2)]!)}** | ${f(s[s.length - 1]!)}`;
}

/** Runs the benchmark (this checkout's CLI, and `otherBin` when given) and returns a Markdown table. */
export async function benchCliStartup(runs = 15, otherBin?: string): Promise<string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "signals-cli-bench-"));
  const embeddedEnv = { DATA_DIR: dataDir, INTERNAL_TOKEN: TOKEN, DATABASE_URL: "" };
  const server = await startServerProcess({ DATA_DIR: dataDir, INTERNAL_TOKEN: TOKEN, DATABASE_URL: "" });
  const db = await benchDatabase();
  const pgEnv = { DATABASE_URL: db.url, DATA_DIR: dataDir };
  const bins = [
    { label: "", bin: BIN },
    ...(otherBin ? [{ label: ` (${otherBin})`, bin: path.resolve(otherBin) }] : []),
  ];
  const show = (bin: string) => [bin, "account", "show", "--account", "1", "--json"];
  try {
    const create = [BIN, "account", "create", "--email", "bench@example.com", "--plan", "free", "--json"];
    timeRun(create, embeddedEnv);
    timeRun(create, pgEnv); // also migrates the fresh database
    const rows = [{ label: "`node -e 0` (baseline)", args: ["-e", "0"], env: {}, times: [] as number[] }];
    for (const { label, bin } of bins) {
      rows.push({ label: `embedded, through a running server${label}`, args: show(bin), env: embeddedEnv, times: [] });
      rows.push({ label: `Postgres, opens the database${label}`, args: show(bin), env: pgEnv, times: [] });
    }
    for (const row of rows) timeRun(row.args, row.env); // warm-up: file and compile caches, the server's first call
    for (let i = 0; i < runs; i++) for (const row of rows) row.times.push(timeRun(row.args, row.env));
    return [
      `\`account show --account 1 --json\`, ${runs} runs each, alternating; wall ms from spawn to exit.`,
      "",
      "| command | min | median | max |",
      "|---|---|---|---|",
      ...rows.map((row) => `| ${row.label} | ${stats(row.times)} |`),
    ].join("\n");
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  console.log(machineLine());
  console.log(await benchCliStartup(Number(process.argv[2] ?? 15), process.argv[3]));
}
