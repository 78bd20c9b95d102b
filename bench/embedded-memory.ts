/**
 * Memory of `npm start` on a bare machine (issue 16, item 6): the embedded database (PGlite,
 * in-process) and the demo feed, on a fresh temporary DATA_DIR. RSS of the whole process tree
 * (npm, its shell and the server; PGlite runs inside the server) is sampled every 250 ms for
 * about 60 s. Peak = the highest sample; steady = the median of the last 10 s. The targets
 * (steady < 300 MiB, peak < 500 MiB) apply to the server process, the one the issue measured
 * (its 623 MiB "a minute after start" is the server alone; npm and its shell add ~60 MiB, shown
 * beside it). Exits non-zero when either is missed.
 *
 * `npm run bench -- embedded-memory`, or `node bench/embedded-memory.ts [seconds]`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const STEADY_TARGET_MIB = 300;
const PEAK_TARGET_MIB = 500;
const SAMPLE_MS = 250;
const STEADY_WINDOW_MS = 10_000;

/** The pid and its descendants (Linux /proc: each task's children). */
function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    let children = "";
    try {
      children = readFileSync(`/proc/${tree[i]}/task/${tree[i]}/children`, "utf8");
    } catch {
      continue; // the process ended between two reads
    }
    for (const child of children.split(" ").filter(Boolean)) tree.push(Number(child));
  }
  return tree;
}

/** Resident set of one process in MiB, 0 when it is gone. */
function rssMiBOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

const isServer = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("src/main.ts");
  } catch {
    return false;
  }
};

interface Sample {
  readonly atMs: number;
  readonly treeMiB: number;
  readonly serverMiB: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Runs the benchmark; returns a Markdown table and whether both targets were met. */
export async function measureEmbeddedMemory(seconds = 60): Promise<{ table: string; ok: boolean }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "signals-embedded-"));
  const started = performance.now();
  const npm = spawn("npm", ["start"], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: "0",
      INTERNAL_PORT: "0",
      DATABASE_URL: "",
      DEMO_FEED: "",
      DEMO_ACCOUNT: "",
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so the whole tree stops with it
  });
  let listeningAtMs: number | null = null;
  let output = "";
  npm.stdout!.on("data", (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8_000);
    if (listeningAtMs === null && output.includes('"msg":"listening"')) listeningAtMs = performance.now() - started;
  });
  npm.stderr!.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_000)));
  const samples: Sample[] = [];
  try {
    while (performance.now() - started < seconds * 1000) {
      if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}; its output:\n${output}`);
      const tree = processTree(npm.pid!);
      samples.push({
        atMs: performance.now() - started,
        treeMiB: tree.reduce((sum, pid) => sum + rssMiBOf(pid), 0),
        serverMiB: tree.filter(isServer).reduce((sum, pid) => sum + rssMiBOf(pid), 0),
      });
      await sleep(SAMPLE_MS);
    }
  } finally {
    process.kill(-npm.pid!, "SIGTERM");
    await new Promise((resolve) => (npm.exitCode !== null ? resolve(null) : npm.once("exit", resolve)));
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (listeningAtMs === null) throw new Error(`the server did not listen within ${seconds} s; its output:\n${output}`);
  const end = samples.at(-1)!.atMs;
  const last = samples.filter((s) => s.atMs >= end - STEADY_WINDOW_MS);
  const peakTree = Math.max(...samples.map((s) => s.treeMiB));
  const peakServer = Math.max(...samples.map((s) => s.serverMiB));
  const steadyTree = median(last.map((s) => s.treeMiB));
  const steadyServer = median(last.map((s) => s.serverMiB));
  const mark = (value: number, target: number) => `${value < target ? "✔" : "✘"}`;
  const ok = steadyServer < STEADY_TARGET_MIB && peakServer < PEAK_TARGET_MIB;
  const measured = `${samples.length} samples every ${SAMPLE_MS} ms over ${(end / 1000).toFixed(0)} s, fresh DATA_DIR`;
  const steadyLabel = `steady RSS (median of the last ${STEADY_WINDOW_MS / 1000} s)`;
  const table = [
    `| measure (${measured}) | server process | whole tree (npm + sh + server) | target (server) |`,
    `|---|---|---|---|`,
    `| peak RSS | **${peakServer.toFixed(0)} MiB** | ${peakTree.toFixed(0)} MiB ` +
      `| < ${PEAK_TARGET_MIB} MiB ${mark(peakServer, PEAK_TARGET_MIB)} |`,
    `| ${steadyLabel} | **${steadyServer.toFixed(0)} MiB** | ${steadyTree.toFixed(0)} MiB ` +
      `| < ${STEADY_TARGET_MIB} MiB ${mark(steadyServer, STEADY_TARGET_MIB)} |`,
    `| npm start → "listening" | ${(listeningAtMs / 1000).toFixed(1)} s | | |`,
  ].join("\n");
  return { table, ok };
}

/** For bench/run.ts: prints the table, sets a failing exit code when a target is missed. */
export async function benchEmbeddedMemory(): Promise<string> {
  const { table, ok } = await measureEmbeddedMemory();
  if (!ok) process.exitCode = 1;
  return table + (ok ? "" : "\n\n**Target missed.**");
}

if (import.meta.main) {
  const { table, ok } = await measureEmbeddedMemory(Number(process.argv[2] ?? 60));
  console.log(table);
  if (!ok) process.exit(1);
}
