/**
 * Runs the README's commands as printed (readme-commands.ts's SCENARIO) in a copy of the
 * project, as a newcomer would in a shell: one bash per command, the shell state (`export KEY=…`)
 * carried from one to the next, servers and feeders left running in the background and stopped
 * with SIGINT as Ctrl-C would; the lanes of a `together` step at the same time. It is started by
 * test/e2e/readme-commands.test.ts inside a network namespace of its own (`unshare`), so the
 * README's fixed ports (8080, 8081, 9464) are free and nothing can reach the internet, and in a
 * PID namespace of which it is the first process, so that when it ends, however it ends, every
 * process it started ends too. The outside services
 * are local fakes whose addresses the environment carries (FEED_REST_URL, FEED_WS_URL,
 * TELEGRAM_API_BASE, STRIPE_API_BASE), as an operator's would carry the real ones.
 *
 * Usage: node test/support/readme-runner.ts <project copy> <results.json>
 * Writes one result per command run or started: the command, its exit code, its output, how long it took.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { crc32, deflateRawSync } from "node:zlib";
import type { Candle } from "../../src/engine/candle.ts";
import { startFakeExchange } from "./fake-exchange.ts";
import { startFakeStripe } from "./fake-stripe.ts";
import { startFakeTelegram } from "./fake-telegram.ts";
import { childEnv } from "./processes.ts";
import { SCENARIO, SERVER_READY, type Step } from "./readme-commands.ts";

export interface StepResult {
  /** The README command (each is run once: the results are looked up by it). */
  readonly command: string;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  /** For a started command: whether it became ready (and the reason when not). */
  readonly ready?: boolean;
  readonly error?: string;
}

const RUN_TIMEOUT_MS = 180_000;
const READY_TIMEOUT_MS = 240_000;
const M15 = 15 * 60_000;

/** A one-member zip (deflated) of `name` holding `content`, as Binance's monthly archives are. */
export function oneFileZip(name: string, content: Buffer): Buffer {
  const data = deflateRawSync(content);
  const crc = crc32(content);
  const nameBytes = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8); // deflate
  local.writeUInt16LE(0x21, 12); // 1980-01-01
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(content.length, 22);
  local.writeUInt16LE(nameBytes.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt16LE(0x21, 14);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(nameBytes.length, 28);
  const centralOffset = local.length + nameBytes.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBytes.length, 12);
  end.writeUInt32LE(centralOffset, 16);
  return Buffer.concat([local, nameBytes, data, central, nameBytes, end]);
}

/** May 2024's 744 hourly ADA/USDT rows in Binance's headerless kline layout (a made-up walk). */
function binanceMonthCsv(): string {
  const start = Date.parse("2024-05-01T00:00:00Z");
  const rows: string[] = [];
  let close = 0.4512;
  for (let i = 0; i < 31 * 24; i++) {
    const open = close;
    close = Math.round(open * (1 + Math.sin(i / 9) * 0.004 + (i % 11 === 0 ? -0.003 : 0.0007)) * 10_000) / 10_000;
    const high = Math.round(Math.max(open, close) * 1.002 * 10_000) / 10_000;
    const low = Math.round(Math.min(open, close) * 0.998 * 10_000) / 10_000;
    const t = start + i * 3_600_000;
    rows.push(
      [
        t,
        open.toFixed(4),
        high.toFixed(4),
        low.toFixed(4),
        close.toFixed(4),
        "1834567.2",
        t + 3_599_999,
        "827113.12",
        4312,
        "912345.1",
        "411234.5",
        "0",
      ].join(","),
    );
  }
  return `${rows.join("\n")}\n`;
}

/** A deterministic 15m series for the fake exchange. */
function fakeSeries(base: number, n: number): Candle[] {
  const out: Candle[] = [];
  let close = base;
  for (let i = 0; i < n; i++) {
    const open = close;
    close = Math.round(open * (1 + Math.sin(i / 6) * 0.003) * 100) / 100;
    out.push({
      openTime: i * M15,
      open,
      high: Math.round(Math.max(open, close) * 1.001 * 100) / 100,
      low: Math.round(Math.min(open, close) * 0.999 * 100) / 100,
      close,
      volume: 50 + (i % 9),
    });
  }
  return out;
}

/** Process groups of the commands started so far (each command's bash leads one). */
const groups = new Set<number>();

/** Sends `signal` to every group started; a group already gone is skipped. */
function signalGroups(signal: NodeJS.Signals): void {
  for (const pid of groups) {
    try {
      process.kill(-pid, signal);
    } catch {
      groups.delete(pid);
    }
  }
}

function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function urlAnswers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const [project, resultsFile] = process.argv.slice(2);
  if (!project || !resultsFile) throw new Error("usage: readme-runner.ts <project copy> <results.json>");
  // However the runner ends (done, thrown, or told to stop), no server or feeder it started outlives it.
  process.on("exit", () => signalGroups("SIGKILL"));
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
    process.on(signal, () => {
      signalGroups("SIGKILL");
      process.exit(1);
    });
  // A new network namespace starts with its loopback down.
  execFileSync("ip", ["link", "set", "lo", "up"]);
  const exchange = await startFakeExchange({
    coins: [
      ["BTC", 60_000],
      ["ETH", 3_000],
      ["SOL", 150],
    ].map(([base, price]) => ({ base: String(base), candles: fakeSeries(Number(price), 400) })),
    interval: "15m",
    intervalMs: M15,
    history: 300,
  });
  const telegram = await startFakeTelegram("123456789:your-token-from-BotFather");
  const stripe = await startFakeStripe();
  const state = path.join(project, ".readme-shell-state");
  writeFileSync(state, "");
  const env = childEnv({
    FEED_REST_URL: exchange.restUrl,
    FEED_WS_URL: exchange.wsUrl,
    TELEGRAM_API_BASE: telegram.apiBase,
    STRIPE_API_BASE: stripe.apiBase,
  });
  delete env.WORKERS;
  const results: StepResult[] = [];
  const running = new Map<string, { child: ChildProcess; readyUrl: string | undefined }>();
  // The state is replaced by a rename, so a command of another lane never reads half of it.
  const shell = (command: string, keepState: boolean) =>
    keepState
      ? `. '${state}'\n${command}\n__rc=$?\nexport -p > '${state}.'$$ && mv -f '${state}.'$$ '${state}'\nexit $__rc`
      : `. '${state}'\n${command}`;

  /** Runs `steps` in order; false when a command that keeps running did not become ready (the scenario ends). */
  async function runSteps(steps: readonly Step[]): Promise<boolean> {
    for (const step of steps) if (!(await runStep(step))) return false;
    return true;
  }

  async function runStep(step: Step): Promise<boolean> {
    const started = Date.now();
    const record = (r: Omit<StepResult, "ms">) => results.push({ ms: Date.now() - started, ...r });
    if ("together" in step) return (await Promise.all(step.together.map((lane) => runSteps(lane)))).every(Boolean);
    if ("standIn" in step) {
      writeFileSync(
        path.join(project!, step.file),
        oneFileZip(step.file.replace(/\.zip$/, ".csv"), Buffer.from(binanceMonthCsv())),
      );
      return true;
    }
    if ("stop" in step) {
      const proc = running.get(step.stop);
      if (!proc) throw new Error(`nothing named ${step.stop} is running`);
      running.delete(step.stop);
      try {
        process.kill(-proc.child.pid!, "SIGINT");
      } catch {
        /* already gone */
      }
      const exited = waitForExit(proc.child);
      const timer = setTimeout(() => {
        try {
          process.kill(-proc.child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, 20_000);
      await exited;
      clearTimeout(timer);
      // The next server needs the ports: after a server, wait until nothing answers on them (after a stream or a
      // feeder, the server they used still answers).
      if (proc.readyUrl === SERVER_READY)
        for (let i = 0; i < 100 && (await urlAnswers(SERVER_READY)); i++) await new Promise((r) => setTimeout(r, 100));
      return true;
    }
    const command = "run" in step ? step.run : step.start;
    const child = spawn("bash", ["-c", shell(command, "run" in step)], {
      cwd: project,
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    groups.add(child.pid!);
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    if ("run" in step) {
      // A command that reads no input may exit before its stdin is written: EPIPE then says
      // nothing about the command, whose exit code and output the step checks.
      child.stdin!.on("error", () => {});
      child.stdin!.end(step.input ?? "");
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, RUN_TIMEOUT_MS);
      const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
      clearTimeout(timer);
      record({ command, code, stdout, stderr });
      return true;
    }
    // A command that keeps running: wait until it is ready (or ends, or the time is up).
    child.stdin!.end();
    const { readyOutput, readyUrl, name } = step;
    running.set(name, { child, readyUrl });
    let error: string | undefined;
    const until = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const outputReady = !readyOutput || readyOutput.test(stdout + stderr);
      const urlReady = !readyUrl || (await urlAnswers(readyUrl));
      if (outputReady && urlReady) break;
      if (child.exitCode !== null || child.signalCode !== null) {
        error = `exited (${child.exitCode ?? child.signalCode}) before it was ready`;
        break;
      }
      if (Date.now() > until) {
        error = `not ready within ${READY_TIMEOUT_MS} ms`;
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    record({ command, code: child.exitCode, stdout, stderr, ready: error === undefined, ...(error ? { error } : {}) });
    return error === undefined;
  }

  await runSteps(SCENARIO);
  // What is still running, and anything a command left behind in its group.
  signalGroups("SIGKILL");
  await Promise.all([exchange.close(), telegram.close(), stripe.close()]);
  writeFileSync(resultsFile, JSON.stringify(results, null, 1));
}

if (import.meta.main) {
  await main();
  process.exit(0);
}
