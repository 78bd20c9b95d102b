/**
 * `npm run bench`: every benchmark in one run, printed as Markdown (paste into
 * bench/README.md with the machine line). Needs PostgreSQL (BENCH_DATABASE_URL or
 * 127.0.0.1:5432), pgbench and wrk; the import benchmark needs ../shared/data.
 *
 * `npm run bench -- alerts` (or `api`, `import`, `memory`, `embedded-memory`, `engine`, `cli`, `workers`, `cold-start`,
 * several names) runs only those.
 * `--smoke`: the API benchmark's five-second run (what .ci/run does). The exit status is non-zero
 * when a benchmark missed a target (bench/api.ts).
 */
import { benchApi, machineLine } from "./api.ts";
import { benchImport } from "./import.ts";
import { benchMemory } from "./memory.ts";
import { benchEmbeddedMemory } from "./embedded-memory.ts";
import { benchAlerts } from "./alerts.ts";
import { benchCliStartup } from "./cli-startup.ts";
import { benchWorkers } from "./workers.ts";
import { benchColdStart } from "./cold-start.ts";

const BENCHES: Record<string, { title: string; run: () => Promise<string | void> }> = {
  api: { title: "Billed REST calls", run: benchApi },
  import: { title: "Import of the twelve real coins", run: benchImport },
  memory: { title: "Memory of a server holding 500 coins × 5 timeframes", run: benchMemory },
  "embedded-memory": { title: "Memory of `npm start` on a bare machine (PGlite, demo feed)", run: benchEmbeddedMemory },
  alerts: { title: "Alerts: candle close to Telegram, 100 members", run: benchAlerts },
  cli: { title: "CLI start-up", run: () => benchCliStartup() },
  workers: { title: "Billed REST calls with WORKERS=1 and WORKERS=2", run: () => benchWorkers() },
  "cold-start": { title: "Cold start: spawn to the first answered call", run: () => benchColdStart() },
  engine: {
    title: "Engine",
    async run() {
      try {
        const engine = await import("./engine.ts");
        if (typeof (engine as { main?: unknown }).main === "function") await (engine as { main: () => Promise<void> }).main();
      } catch (err) {
        console.log(`engine benchmark: ${(err as Error).message}`);
      }
    },
  },
};

const names = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
const unknown = names.filter((name) => !(name in BENCHES));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(", ")}; choose from ${Object.keys(BENCHES).join(", ")}`);
  process.exit(2);
}

console.log(`Machine: ${machineLine()}\n`);
for (const name of names.length > 0 ? names : Object.keys(BENCHES)) {
  const bench = BENCHES[name]!;
  console.log(`## ${bench.title}\n`);
  const table = await bench.run();
  if (typeof table === "string") console.log(table + "\n");
}
