/**
 * `npm run bench`: every benchmark in one run, printed as Markdown (paste into
 * bench/README.md with the machine line). Needs PostgreSQL (BENCH_DATABASE_URL or
 * 127.0.0.1:5432), pgbench and wrk; the import benchmark needs ../shared/data.
 *
 * `npm run bench -- alerts` (or `api`, `import`, `memory`, `embedded-memory`, `engine`, `cli`, `workers`, `cold-start`,
 * several names) runs only those.
 * `--smoke`: the API benchmark's five-second run (what .ci/run does). The exit status is non-zero
 * when a benchmark missed a target (bench/api.ts).
 * `feeder-400` is slow (30 minutes by default) and runs only when named:
 * `nice -n 19 npm run bench -- feeder-400 --minutes 30` (bench/feeder-400.ts). So is `burst`
 * (bench/burst.ts): `nice -n 10 npm run bench -- burst --boundaries 3`.
 */

import { benchAlerts } from "./alerts.ts";
import { benchApi, machineLine } from "./api.ts";
import { benchBurst } from "./burst.ts";
import { benchCliStartup } from "./cli-startup.ts";
import { benchColdStart } from "./cold-start.ts";
import { benchEmbeddedMemory } from "./embedded-memory.ts";
import { benchFeeder400 } from "./feeder-400.ts";
import { benchImport } from "./import.ts";
import { benchMemory } from "./memory.ts";
import { benchWorkers } from "./workers.ts";

const BENCHES: Record<string, { title: string; run: () => Promise<string | undefined>; slow?: boolean }> = {
  api: { title: "Billed REST calls", run: benchApi },
  import: { title: "Import of the twelve real coins", run: benchImport },
  memory: { title: "Memory of a server holding 500 coins × 5 timeframes", run: benchMemory },
  "embedded-memory": { title: "Memory of `npm start` on a bare machine (PGlite, demo feed)", run: benchEmbeddedMemory },
  alerts: { title: "Alerts: candle close to Telegram, 100 members", run: benchAlerts },
  cli: { title: "CLI start-up", run: () => benchCliStartup() },
  workers: { title: "Billed REST calls with WORKERS=1 and WORKERS=2", run: () => benchWorkers() },
  "cold-start": { title: "Cold start: spawn to the first answered call", run: () => benchColdStart() },
  "feeder-400": { title: "One feeder on 400 coins, random socket drops", run: benchFeeder400, slow: true },
  burst: {
    title: "The boundary burst: 400 coins closing at once, WORKERS=2, 100 members with alerts",
    run: benchBurst,
    slow: true,
  },
  engine: {
    title: "Engine",
    async run() {
      // Prints its own lines; no table to return.
      try {
        const engine = await import("./engine.ts");
        if (typeof (engine as { main?: unknown }).main === "function")
          await (engine as { main: () => Promise<void> }).main();
      } catch (err) {
        console.log(`engine benchmark: ${(err as Error).message}`);
      }
      return undefined;
    },
  },
};

/** Options that take a value (`--minutes 30`): the value is not a benchmark's name. */
const VALUE_OPTIONS = new Set(["--minutes", "--history", "--boundaries"]);
const args = process.argv.slice(2);
const names = args.filter((arg, i) => !arg.startsWith("--") && !VALUE_OPTIONS.has(args[i - 1] ?? ""));
const unknown = names.filter((name) => !(name in BENCHES));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(", ")}; choose from ${Object.keys(BENCHES).join(", ")}`);
  process.exit(2);
}

console.log(`Machine: ${machineLine()}\n`);
for (const name of names.length > 0 ? names : Object.keys(BENCHES).filter((n) => !BENCHES[n]!.slow)) {
  const bench = BENCHES[name]!;
  console.log(`## ${bench.title}\n`);
  const table = await bench.run();
  if (typeof table === "string") console.log(`${table}\n`);
}
