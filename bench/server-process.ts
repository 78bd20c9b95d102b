/**
 * Starts `node src/main.ts` as a child process for benchmarks and waits for its "listening"
 * log line (ports chosen by the OS). One server process (WORKERS=1) unless `env` says
 * otherwise, so that a figure does not depend on the machine's core count (bench/workers.ts
 * compares 1 and 2).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, readFileSync } from "node:fs";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import postgres from "postgres";
import { AdminService } from "../gen/signals/v1/admin_pb.js";

const BASE_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** A fresh database on the benchmark server: its URL and a function that drops it. */
export async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `signals_bench_${randomBytes(4).toString("hex")}`;
  const u = new URL(BASE_URL);
  u.pathname = "/postgres";
  const admin = postgres(u.toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  // Every statement in the server's log, to count what a burst sends (BENCH_PG_LOG_STATEMENTS=1),
  // or with its duration (=duration; log_min_duration_statement 0). bench/pg-statements.ts reads it.
  const logStatements = process.env.BENCH_PG_LOG_STATEMENTS;
  if (logStatements === "1") await admin.unsafe(`ALTER DATABASE ${name} SET log_statement = 'all'`);
  if (logStatements === "duration") await admin.unsafe(`ALTER DATABASE ${name} SET log_min_duration_statement = 0`);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** package.json's "start" script in words: `NAME=value` assignments, then `node`, its flags and the entry. */
function npmStartWords(): { env: Record<string, string>; words: string[] } {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0] ?? "")) {
    const [name, value] = words.shift()!.split("=", 2) as [string, string];
    env[name] = value;
  }
  if (words[0] !== "node" || words.at(-1) !== "src/main.ts")
    throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return { env, words };
}

/**
 * The V8/Node flags `npm start` gives the server, read from package.json's "start" script so a
 * benchmark's server runs exactly as `npm start` does; `BENCH_NODE_FLAGS` (space-separated)
 * adds flags after them, to try one out (a later flag of the same name wins).
 */
export function npmStartFlags(): string[] {
  const { words } = npmStartWords();
  return [...words.slice(1, -1), ...(process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [])];
}

/**
 * The environment `npm start` sets for the server (Node's compile cache, a path relative to the
 * server's directory, as npm runs the script there).
 */
export function npmStartEnv(): Record<string, string> {
  return npmStartWords().env;
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  internalPort: number;
  /** With WORKERS > 1, the workers' pids at start, lead first; else empty. */
  workerPids: number[];
  /** The log lines written before "listening" (start-up's, e.g. each worker's start-up GC). */
  startLog: string;
}

/**
 * Spawns the server with extra environment (and V8 flags after npm start's) and resolves once it listens; kills it and
 * rejects (with its output so far) when it has not listened within timeoutMs, rather than hanging.
 */
export function startServerProcess(
  env: Record<string, string>,
  timeoutMs = 60_000,
  extraFlags: string[] = [],
  dir = process.env.BENCH_SERVER_DIR,
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...npmStartFlags(), ...extraFlags, "src/main.ts"], {
    cwd: dir || undefined,
    env: {
      ...process.env,
      ...npmStartEnv(),
      PORT: "0",
      INTERNAL_PORT: "0",
      LOG_LEVEL: process.env.BENCH_SERVER_LOG ? "debug" : "info",
      DEMO_ACCOUNT: "false",
      DEMO_FEED: "false",
      WORKERS: "1",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the server did not listen within ${timeoutMs} ms; its output:\n${buffer.slice(-4000)}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      buffer += d.toString();
      const line = buffer.split("\n").find((l) => l.includes('"listening"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      // BENCH_SERVER_LOG=<file> keeps the server's log lines (with LOG_LEVEL=debug in env: stage timings).
      if (process.env.BENCH_SERVER_LOG) child.stdout!.pipe(createWriteStream(process.env.BENCH_SERVER_LOG));
      else child.stdout!.resume();
      const info = JSON.parse(line) as { port: number; internalPort: number; workerPids?: number[] };
      resolve({
        child,
        port: info.port,
        internalPort: info.internalPort,
        workerPids: info.workerPids ?? [],
        startLog: buffer,
      });
    };
    child.stdout!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}`));
    });
  });
}

/** Resident set size of a process in MiB (Linux /proc). */
export async function rssMiB(pid: number): Promise<number> {
  const { readFileSync } = await import("node:fs");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return kb / 1024;
}

/** Sends the internal token with every call to a server's internal listener. */
export function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** An AdminService client for the internal listener on `internalPort` (HTTP/1.1, the token sent). */
export function internalAdminClient(internalPort: number, token: string): Client<typeof AdminService> {
  return createClient(
    AdminService,
    createConnectTransport({
      baseUrl: `http://127.0.0.1:${internalPort}`,
      httpVersion: "1.1",
      interceptors: [bearer(token)],
    }),
  );
}
