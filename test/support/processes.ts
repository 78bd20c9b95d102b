/**
 * Real child processes for end-to-end tests: the `signals` CLI and `src/main.ts` servers, run on
 * the project's Node 24 (node_modules/.bin/node, native type stripping) with a clean environment.
 */
import { type ChildProcess, type ChildProcessByStdio, spawn } from "node:child_process";
import { createServer } from "node:net";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { ENVIRONMENT_VARIABLES } from "../../src/config.ts";
import { TEST_PASSWORD_COST_ENV } from "./password-cost.ts";
import { PROCESS_WAIT_MS, stopWaitMs } from "./waits.ts";

export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The project's Node 24 (the `node` npm package); PATH `node` may be older. */
export const NODE_BIN = fileURLToPath(new URL("../../node_modules/.bin/node", import.meta.url));

/**
 * Node's flag from `npm start` (package.json) that bears on a test: PGlite's WebAssembly stays on V8's baseline
 * compiler, as in production. Without it an embedded server's first start took ~1.2 s more CPU (6.3 s against 5.1) and
 * twice the memory (~1 GiB) for V8's optimising tier.
 */
const SERVER_NODE_FLAGS = ["--liftoff-only"];

/** Children started here that are still running: killed when the test process exits, however the test ended. */
const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

export function tracked<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Variables the code under test reads (and NODE_OPTIONS); never inherited from the test runner's environment. */
export const CONFIG_VARS: readonly string[] = [...ENVIRONMENT_VARIABLES, "NODE_OPTIONS"];

/**
 * Worker processes of each server a test starts on Postgres: the runner's WORKERS (so that
 * `WORKERS=2 npx vitest run …` runs every multi-process and reliability test over clustered
 * servers), else 1. PGlite servers are single-process and get none.
 */
const TEST_WORKERS = process.env.WORKERS?.trim() || "1";

/**
 * process.env without the service's configuration, plus the tests' password hashing cost
 * (password-cost.ts), `vars` (which may override it), and WORKERS on Postgres (see TEST_WORKERS).
 */
export function childEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of CONFIG_VARS) delete env[name];
  return {
    ...env,
    ...TEST_PASSWORD_COST_ENV,
    ...(vars.DATABASE_URL !== undefined ? { WORKERS: TEST_WORKERS } : {}),
    ...vars,
  };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Collects a child's output until it exits; kills it and rejects with `what` after timeoutMs.
 * `onStdout` sees the output so far after each chunk.
 */
function runToExit(
  child: ChildProcessByStdio<Writable | null, Readable, Readable>,
  timeoutMs: number,
  what: string,
  onStdout?: (stdout: string) => void,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      onStdout?.(stdout);
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs `signals <args>` (src/cli/bin.ts) to completion. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = PROCESS_WAIT_MS): Promise<CliResult> {
  const child = tracked(
    spawn(NODE_BIN, ["src/cli/bin.ts", ...args], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  return runToExit(child, timeoutMs, `signals ${args.join(" ")} did not finish`);
}

/** Runs `signals <args>` with `input` on its standard input (a pipe, closed after the input). */
export function runCliWithInput(
  args: string[],
  env: NodeJS.ProcessEnv,
  input: string,
  timeoutMs = PROCESS_WAIT_MS,
): Promise<CliResult> {
  const child = tracked(
    spawn(NODE_BIN, ["src/cli/bin.ts", ...args], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    }),
  );
  child.stdin.end(input);
  return runToExit(child, timeoutMs, `signals ${args.join(" ")} did not finish`);
}

export interface ServerProcess {
  /** The process started (with WORKERS > 1, the cluster's primary). */
  readonly pid: number;
  /** With WORKERS > 1, the workers' pids at start, lead first; else empty. */
  readonly workerPids: number[];
  readonly port: number;
  readonly internalPort: number;
  readonly baseUrl: string;
  readonly internalUrl: string;
  /** JSON log lines written to stdout so far. */
  logs(): Array<Record<string, unknown>>;
  stderr(): string;
  /** SIGTERM, wait for the exit (SIGKILL after a grace period); resolves to the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL (a crash: no drain, no cleanup); resolves once the process is gone and reaped. */
  kill(): Promise<void>;
}

/** Outcome of a server process that exited (or never said "listening"). */
export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function waitForExit(child: ChildProcess, graceMs: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * Starts `node src/main.ts` with `env` and resolves once its "listening" log line names the
 * ports. Rejects with the process's output when it exits first or takes longer than timeoutMs.
 */
export function startServerProcess(env: NodeJS.ProcessEnv, timeoutMs = PROCESS_WAIT_MS): Promise<ServerProcess> {
  return new Promise((resolve, reject) => {
    const child = tracked(
      spawn(NODE_BIN, [...SERVER_NODE_FLAGS, "src/main.ts"], {
        cwd: PROJECT_ROOT,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    const logs: Array<Record<string, unknown>> = [];
    let stdout = "";
    let stderr = "";
    let pending = "";
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${why}\nstdout: ${stdout}\nstderr: ${stderr}`));
    };
    const timer = setTimeout(() => fail(`server did not log "listening" within ${timeoutMs} ms`), timeoutMs);
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        logs.push(entry);
        if (!settled && entry.msg === "listening") {
          settled = true;
          clearTimeout(timer);
          const port = Number(entry.port);
          const internalPort = Number(entry.internalPort);
          resolve({
            pid: child.pid!,
            workerPids: Array.isArray(entry.workerPids) ? (entry.workerPids as number[]) : [],
            port,
            internalPort,
            baseUrl: `http://127.0.0.1:${port}`,
            internalUrl: `http://127.0.0.1:${internalPort}`,
            logs: () => [...logs],
            stderr: () => stderr,
            async stop() {
              if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
              return waitForExit(child, stopWaitMs(env));
            },
            async kill() {
              if (child.exitCode !== null || child.signalCode !== null) return;
              const exited = new Promise<void>((done) => child.once("exit", () => done()));
              child.kill("SIGKILL");
              await exited;
            },
          });
        }
      }
    });
    child.on("error", (err) => fail(`could not spawn the server: ${err.message}`));
    child.on("exit", (code, signal) => fail(`server exited (code ${code}, signal ${signal}) before listening`));
  });
}

/** Runs a server process that is expected to refuse to start; resolves when it exits. */
export function runServerToExit(env: NodeJS.ProcessEnv, timeoutMs = PROCESS_WAIT_MS): Promise<ServerExit> {
  const child = tracked(
    spawn(NODE_BIN, [...SERVER_NODE_FLAGS, "src/main.ts"], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  // It started after all: stop it now rather than at the timeout (the caller sees exit 0).
  return runToExit(child, timeoutMs, "server still running", (stdout) => {
    if (/"msg":"listening"/.test(stdout)) child.kill("SIGTERM");
  });
}

/** True when some line of `text` looks like a JavaScript stack frame. */
export function hasStackTrace(text: string): boolean {
  return /^\s+at /m.test(text);
}

/** A TCP port free on 127.0.0.1 right now (for a server that must keep its port across a restart). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
