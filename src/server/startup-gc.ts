/**
 * One memory-reducing ("last-resort") garbage collection in a server process, once, when
 * start-up's heavy work is done (the market loaded, the lead's event chain caught up, the
 * listeners open) and before the process reports ready, so that its pause falls before any
 * traffic. V8 gives back its pooled pages (freed heap pages it keeps for reuse) only on a
 * memory-reducing GC, and its memory reducer starts one only in a process that allocates
 * little, which a worker forming 400 coins' updates never is (bench/README.md, "In the burst
 * bench: what the lead holds"). Never again after start-up: one during load paused 70-137 ms
 * and the heap grew back within seconds (docs/decisions.md).
 *
 * Node has no call for it without `--expose-gc`; the flag is set for one new context only
 * (`gc` is never put on this process's global object) and cleared again.
 */
import v8 from "node:v8";
import vm from "node:vm";

export interface StartupGcResult {
  /** Wall time of the collection, in milliseconds. */
  readonly pauseMs: number;
  readonly rssBeforeMiB: number;
  readonly rssAfterMiB: number;
  readonly heapUsedBeforeMiB: number;
  readonly heapUsedAfterMiB: number;
}

type GcFunction = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;

let ran = false;

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/**
 * Runs the start-up collection the first time it is called in this process and returns what
 * it did; returns null on every later call (the process's start-up happens once).
 */
export function startupGc(): StartupGcResult | null {
  if (ran) return null;
  ran = true;
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as GcFunction;
  v8.setFlagsFromString("--no-expose-gc");
  const before = process.memoryUsage();
  const started = performance.now();
  gc({ type: "major", execution: "sync", flavor: "last-resort" });
  const pauseMs = Math.round((performance.now() - started) * 10) / 10;
  const after = process.memoryUsage();
  return {
    pauseMs,
    rssBeforeMiB: mib(before.rss),
    rssAfterMiB: mib(after.rss),
    heapUsedBeforeMiB: mib(before.heapUsed),
    heapUsedAfterMiB: mib(after.heapUsed),
  };
}
