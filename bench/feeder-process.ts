/**
 * What the benchmarks that run a real `signals feed` against the fake Binance share: the
 * command-line options, the fake exchange listing many coins (`test/support/fake-market.ts`:
 * the twelve real series, re-timed and scaled per coin), the feeder process and its metrics,
 * and the checks on what the database holds. Used by bench/feeder-400.ts and bench/burst.ts.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import type postgres from "postgres";
import { type FakeExchange, startFakeExchange } from "../test/support/fake-exchange.ts";
import { realMarket } from "../test/support/fake-market.ts";
import { childEnv, NODE_BIN, PROJECT_ROOT } from "../test/support/processes.ts";

export const TF_MS = 15 * 60_000;

/** `--name N` or `--name=N` from the command line. */
export function numberOption(name: string, fallback: number): number {
  const args = process.argv.slice(2);
  const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return fallback;
  const raw = args[i]!.includes("=") ? args[i]!.split("=")[1] : args[i + 1];
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number, got ${raw}`);
  return value;
}

/** The p-th percentile (0..100) of the values, nearest rank; NaN when there are none. */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/**
 * A fake Binance listing `coins` real-series coins on the 15m base with `history` closed candles
 * each and room for `closes` more. Its clock starts far enough in the past that `closes` closes
 * (however fast they come) never pass the real clock: the service refuses candles from the future.
 */
export async function startFakeMarket(
  coins: number,
  history: number,
  closes: number,
): Promise<{ fake: FakeExchange; bases: string[] }> {
  const startOpenTime = Math.floor(Date.now() / TF_MS) * TF_MS - (closes + 8) * TF_MS;
  const market = realMarket(coins, history + closes + 40);
  const fake = await startFakeExchange({
    coins: market,
    interval: "15m",
    intervalMs: TF_MS,
    history: history + 10,
    startOpenTime,
  });
  return { fake, bases: market.map((c) => c.base) };
}

export interface FeederRun {
  readonly child: ChildProcess;
  readonly bases: string[];
  logs(): string;
  metricsPort(): number | null;
}

/** BENCH_FEEDER_LOGS=dir keeps each feeder's log lines there (for looking into a miss). */
const LOG_DIR = process.env.BENCH_FEEDER_LOGS ?? null;

/** The feeder's environment against `fake` and the server's internal listener. */
export function feederEnv(
  fake: FakeExchange,
  internalPort: number,
  token: string,
  history: number,
): Record<string, string> {
  return {
    FEED_REST_URL: fake.restUrl,
    FEED_WS_URL: fake.wsUrl,
    FEED_SERVER: `http://127.0.0.1:${internalPort}`,
    INTERNAL_TOKEN: token,
    FEED_HISTORY: String(history),
    FEED_DATASETS: "candles",
    FEED_METRICS_PORT: "0",
    FEED_SILENCE: "90",
    // Lease expiry is not what these benches measure: on a starved machine (nice 19 beside other
    // people's suites) a server slow to answer lease rounds would make the feeder hand its
    // coins back and cold-start them again. The lease's own failover is tested in test/e2e/feeder.test.ts.
    FEED_FAILOVER: "180",
    // With BENCH_FEEDER_LOGS, the pushes' timings too (debug).
    LOG_LEVEL: LOG_DIR ? "debug" : "info",
  };
}

/** Starts `signals feed` on `bases` (15m); keeps only the log lines the benches read. */
export function spawnFeeder(bases: string[], env: Record<string, string>): FeederRun {
  const child = spawn(NODE_BIN, ["src/cli/bin.ts", "feed", "--symbols", bases.join(","), "--tf", "15m"], {
    cwd: PROJECT_ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  // Only the lines the bench reads are kept: 400 coins log a lot.
  const log = LOG_DIR ? createWriteStream(`${LOG_DIR}/feeder-${bases.length}-coins-${Date.now()}.log`) : null;
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    log?.write(d);
    for (const line of d.split("\n")) if (line.includes('"feeder started"')) out += `${line}\n`;
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
  return {
    child,
    bases,
    logs: () => out + err,
    metricsPort: () => Number(/"metricsPort":(\d+)/.exec(out)?.[1] ?? NaN) || null,
  };
}

/** The sum of a feeder's Prometheus metric over its labels; NaN before its metrics listen. */
export async function feederMetric(run: FeederRun, name: string): Promise<number> {
  const port = run.metricsPort();
  if (port === null) return NaN;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))].reduce((s, m) => s + Number(m[1]), 0);
}

/** SIGTERM (SIGKILL after 15 s); resolves once the child has exited. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** Per coin, the open time of the newest closed 15m candle the database holds. */
export async function storedLastCloses(sql: postgres.Sql): Promise<Map<string, number>> {
  const rows = await sql<
    { symbol: string; last: number }[]
  >`SELECT symbol, max(open_time)::float8 AS last FROM candles WHERE tf = '15m' AND closed GROUP BY symbol`;
  return new Map(rows.map((r) => [r.symbol, Number(r.last)]));
}

/** True when the database holds every coin's closed candles up to the exchange's newest. */
export function caughtUp(fake: FakeExchange, bases: readonly string[], stored: Map<string, number>): boolean {
  return bases.every((b) => stored.get(b) === fake.closed(b).at(-1)!.openTime);
}

/**
 * Waits until the feeders have stored every coin's history, throwing when one exits or it takes
 * longer than `limitMs`; the exchange keeps streaming forming updates every `tickMs`, as a real one does.
 */
export async function waitForColdStart(
  fake: FakeExchange,
  bases: readonly string[],
  sql: postgres.Sql,
  feeders: readonly FeederRun[],
  tickMs: number,
  limitMs = 15 * 60_000,
): Promise<number> {
  const started = Date.now();
  let lastTick = Date.now();
  while (!caughtUp(fake, bases, await storedLastCloses(sql))) {
    if (Date.now() - lastTick >= tickMs) {
      fake.tick();
      lastTick = Date.now();
    }
    for (const f of feeders)
      if (f.child.exitCode !== null) throw new Error(`a feeder exited ${f.child.exitCode}:\n${f.logs()}`);
    if (Date.now() - started > limitMs) throw new Error(`the cold start did not finish in ${limitMs / 60_000} min`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return Date.now() - started;
}
