/**
 * Cold start (issue 16, item 8): wall time from spawning the server, as `npm start` runs it
 * (`node <npm start's flags> src/main.ts`, without npm's own start-up), to its first
 * answered paid call (`GET /api/v1/signals` answered 200 with the demo account's key), and to
 * its "listening" line. Four cases, each on a fresh data directory or database and then
 * restarted on it:
 *
 *  - embedded: PGlite in a new DATA_DIR, with the defaults of a bare `npm start` (demo feed and
 *    demo account on); the restart opens the same directory;
 *  - postgres: a new database (migrations run on the first start), DEMO_ACCOUNT=true for the
 *    key, WORKERS=1 and WORKERS=2.
 *
 *   npm run bench -- cold-start    (or: node bench/cold-start.ts [runs]; Postgres at
 *                                   BENCH_DATABASE_URL or 127.0.0.1:5432)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { machineLine } from "./api.ts";
import { benchDatabase, npmStartEnv, npmStartFlags } from "./server-process.ts";

const MAIN = path.resolve(import.meta.dirname, "../src/main.ts");

/** A port free right now (the server binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

interface Start {
  /** Spawn to the "listening" line, ms. */
  listeningMs: number;
  /** Spawn to the first 200 of the paid endpoint, ms. */
  firstCallMs: number;
  /** The demo key (printed on a first start; reused by the restart). */
  apiKey: string;
}

/**
 * Starts the server with `env`, polls the paid endpoint until it answers 200, then stops the
 * server (SIGTERM, waits for its exit). `apiKey` is known on a restart; on a first start it is
 * read from the demo account's notice on stderr.
 */
async function timeStart(env: Record<string, string>, apiKey?: string): Promise<Start> {
  const [port, internalPort] = [await freePort(), await freePort()];
  const started = performance.now();
  const child = spawn(process.execPath, [...npmStartFlags(), MAIN], {
    env: {
      ...process.env,
      ...npmStartEnv(),
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let listeningMs = NaN;
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    if (Number.isNaN(listeningMs) && stdout.includes('"msg":"listening"')) listeningMs = performance.now() - started;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`server exited ${child.exitCode}:\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`);
      if (performance.now() - started > 120_000) throw new Error(`no answer within 120 s:\n${stdout.slice(-2000)}`);
      const key = apiKey ?? /^\s+(sig_live_\S+)$/m.exec(stderr)?.[1];
      if (key) {
        const status = await fetch(`http://127.0.0.1:${port}/api/v1/signals?symbols=BTC&tf=1h`, {
          headers: { "x-api-key": key },
        }).then(
          (res) => res.arrayBuffer().then(() => res.status),
          () => 0,
        );
        if (status === 200) {
          const firstCallMs = performance.now() - started;
          // With WORKERS > 1 a worker can answer before the primary says "listening" (all are up).
          while (Number.isNaN(listeningMs) && child.exitCode === null && performance.now() - started < 120_000)
            await sleep(5);
          return { listeningMs, firstCallMs, apiKey: key };
        }
      }
      await sleep(5);
    }
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

const ms = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return `${s[0]!.toFixed(0)} / **${s[Math.floor(s.length / 2)]!.toFixed(0)}** / ${s[s.length - 1]!.toFixed(0)}`;
};

/** Runs each case `runs` times (fresh, then restart) and returns a Markdown table. */
export async function benchColdStart(runs = 3): Promise<string> {
  const cases: Array<{
    label: string;
    fresh: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>;
  }> = [
    {
      label: "embedded (PGlite, demo feed)",
      async fresh() {
        const dataDir = mkdtempSync(path.join(tmpdir(), "signals-cold-"));
        return {
          env: { DATA_DIR: dataDir, DATABASE_URL: "", WORKERS: "1" },
          cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
        };
      },
    },
    ...[1, 2].map((workers) => ({
      label: `postgres, WORKERS=${workers}`,
      async fresh() {
        const db = await benchDatabase();
        const dataDir = mkdtempSync(path.join(tmpdir(), "signals-cold-"));
        return {
          env: { DATABASE_URL: db.url, DATA_DIR: dataDir, DEMO_ACCOUNT: "true", WORKERS: String(workers) },
          cleanup: async () => {
            await db.drop();
            rmSync(dataDir, { recursive: true, force: true });
          },
        };
      },
    })),
  ];
  const rows: string[] = [];
  const timings = cases.map(() => ({ fresh: [] as Start[], restart: [] as Start[] }));
  // Runs alternate between the cases so that drift in the machine's speed hits them alike.
  for (let run = 0; run < runs; run++) {
    for (const [i, c] of cases.entries()) {
      const { env, cleanup } = await c.fresh();
      try {
        const first = await timeStart(env);
        const again = await timeStart(env, first.apiKey);
        timings[i]!.fresh.push(first);
        timings[i]!.restart.push(again);
        console.log(`${c.label}: fresh ${first.firstCallMs.toFixed(0)} ms, restart ${again.firstCallMs.toFixed(0)} ms`);
      } finally {
        await cleanup();
      }
    }
  }
  rows.push(
    `| case | start | to "listening" (min / **median** / max, ms) | to the first answered paid call (ms) |`,
    `|---|---|---|---|`,
  );
  for (const [i, c] of cases.entries()) {
    for (const kind of ["fresh", "restart"] as const) {
      const t = timings[i]![kind];
      rows.push(
        `| ${c.label} | ${kind === "fresh" ? "fresh data directory / database" : "restart on it"} ` +
          `| ${ms(t.map((s) => s.listeningMs))} | ${ms(t.map((s) => s.firstCallMs))} |`,
      );
    }
  }
  return rows.join("\n");
}

if (import.meta.main) {
  console.log(machineLine());
  console.log(await benchColdStart(Number(process.argv[2] ?? 3)));
}
