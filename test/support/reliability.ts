/**
 * Helpers shared by the reliability tests (test/reliability/*): what an answer must never
 * contain, waiting for conditions, the MYT day boundary, server processes whose start-up we
 * watch line by line, and PostgreSQL backends of one database.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import { nextMytMidnight } from "../../src/clock.ts";
import { NODE_BIN, PROJECT_ROOT, tracked } from "./processes.ts";

/** Heavy mode (RELIABILITY_FULL=1): more calls, more faults, more generated inputs. */
export const FULL = process.env.RELIABILITY_FULL === "1";

/**
 * Why `text` (an answer body, a trailer, an error message) leaks internals, or null: a stack
 * frame, a source path, SQL, a 64-hex digest (key hashes), an API key, a driver error name.
 */
export function leakIn(text: string): string | null {
  const checks: Array<[RegExp, string]> = [
    [/^\s+at\s/m, "stack frame"],
    [/\bat [\w.<>]+ \(/, "stack frame"],
    [/(?:\/work\/|\/src\/|\/node_modules\/|file:\/\/|\.ts:\d+)/, "source path"],
    [/\b(?:SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|charge_call|ledger_entries|api_keys)\b/i, "SQL"],
    [/\b[0-9a-f]{64}\b/i, "hex digest"],
    [/sig_live_[A-Za-z0-9]{8,}/, "API key"],
    [/\b(?:ECONNRESET|ECONNREFUSED|PostgresError|DrizzleQueryError|TypeError|ReferenceError)\b/, "internal error name"],
  ];
  for (const [pattern, what] of checks) if (pattern.test(text)) return what;
  return null;
}

/**
 * Polls `check` every `everyMs` until it is truthy or `timeoutMs` passes (then throws `what`;
 * a function is asked at that moment, so the message can show the state the wait ended in).
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  what: string | (() => string),
  everyMs = 50,
): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "function" ? what() : what}`);
    await sleep(everyMs);
  }
}

/**
 * Waits until at least `neededMs` remain before 00:00 MYT, so that a test counting calls
 * against the daily cap does not see the day (and the count) change under it.
 */
export async function awayFromMytMidnight(neededMs: number): Promise<void> {
  const left = nextMytMidnight(Date.now()) - Date.now();
  if (left < neededMs) await sleep(left + 1_000);
}

/** A server process whose stdout JSON lines are visible while it starts (and afterwards). */
export interface WatchedProcess {
  readonly child: ChildProcess;
  readonly logs: Array<Record<string, unknown>>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  readonly exited: Promise<number | string | null>;
}

/** Spawns `node src/main.ts` with `env` and collects its output from the first byte. */
export function spawnServer(env: NodeJS.ProcessEnv): WatchedProcess {
  return spawnWatched(["src/main.ts"], env);
}

/**
 * Spawns `node <args>` in the project with `env`; its JSON log lines are collected as they come.
 * `launcher` runs it through another command (e.g. `ip netns exec <ns>`), which must exec node.
 */
export function spawnWatched(args: string[], env: NodeJS.ProcessEnv, launcher: readonly string[] = []): WatchedProcess {
  const [command, ...prefix] = [...launcher, NODE_BIN];
  const child = tracked(
    spawn(command!, [...prefix, ...args], { cwd: PROJECT_ROOT, env, stdio: ["ignore", "pipe", "pipe"] }),
  );
  const logs: Array<Record<string, unknown>> = [];
  let out = "";
  let err = "";
  let pending = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  return { child, logs, stdout: () => out, stderr: () => err, exited };
}

/** The "listening" line of a watched process, with its ports, once it is there. */
export async function listeningOf(
  p: WatchedProcess,
  timeoutMs: number,
): Promise<{ port: number; internalPort: number; internalHost: string; host: string }> {
  const line = await waitFor(() => p.logs.find((l) => l.msg === "listening"), timeoutMs, "the listening line", 25);
  return {
    port: Number(line.port),
    internalPort: Number(line.internalPort),
    internalHost: String(line.internalHost),
    host: String(line.host),
  };
}

/** SIGKILL if still running, and wait for the exit. */
export async function killHard(p: WatchedProcess): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await p.exited;
}

/** A small direct connection (not through any proxy) for looking at and terminating backends. */
export function adminSql(url: string): postgres.Sql {
  // Several connections: a test may hold a transaction on one while it looks around on another.
  return postgres(url, { max: 3, onnotice: () => {}, connection: { application_name: "reliability-test" } });
}

/** Terminates the backends of database `url` that carry `applicationName`; returns how many. */
export async function terminateBackends(sql: postgres.Sql, applicationName: string): Promise<number> {
  const rows = await sql<{ ok: boolean }[]>`
    SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = ${applicationName} AND pid <> pg_backend_pid()`;
  return rows.filter((r) => r.ok).length;
}

/** `url` with an application_name, so the test can tell the server's backends from its own. */
export function withApplicationName(url: string, name: string): string {
  const u = new URL(url);
  u.searchParams.set("application_name", name);
  return u.toString();
}

/** Holds an account's row lock from another connection (as a concurrent charge would) until `release()`. */
export async function lockAccountRow(
  admin: postgres.Sql,
  accountId: number,
): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const tx = admin.begin(async (t) => {
    await t`SELECT 1 FROM accounts WHERE id = ${accountId} FOR UPDATE`;
    locked();
    await released;
  });
  await isLocked;
  const releaseLock = async () => {
    release();
    await tx.catch(() => {});
  };
  return { release: releaseLock };
}
