/**
 * `npm run bench`: every benchmark in one run, printed as Markdown (paste into
 * bench/README.md with the machine line). Needs PostgreSQL (BENCH_DATABASE_URL or
 * 127.0.0.1:5432), pgbench and wrk; the import benchmark needs ../shared/data.
 */
import { benchApi, machineLine } from "./api.ts";
import { benchImport } from "./import.ts";
import { benchMemory } from "./memory.ts";

console.log(`Machine: ${machineLine()}\n`);
console.log("## Billed REST calls\n");
console.log((await benchApi()) + "\n");
console.log("## Import of the twelve real coins\n");
console.log((await benchImport()) + "\n");
console.log("## Memory of a server holding 500 coins × 5 timeframes\n");
console.log((await benchMemory()) + "\n");
try {
  const engine = await import("./engine.ts");
  if (typeof (engine as { main?: unknown }).main === "function") await (engine as { main: () => Promise<void> }).main();
} catch (err) {
  console.log(`engine benchmark: ${(err as Error).message}`);
}
