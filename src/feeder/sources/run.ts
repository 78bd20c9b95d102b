/**
 * The one loop every periodic source runs in: poll, then wait what the source asked for (or
 * the tick), until stopped. A source does its own timing by its clock; the loop only wakes it.
 */
import type { Logger } from "pino";
import { sleep } from "../timing.ts";
import type { PeriodicSource } from "./source.ts";
import type { SourceStatus, SourceStatusBoard } from "./source-status.ts";

export interface RunningSources {
  /** Stops every loop, aborts requests in flight and waits for the loops to end. */
  stop(): Promise<void>;
  statuses(): SourceStatus[];
}

/** Starts one loop per source; each polls at once, then after the wait it asks for (`tickMs` by default). */
export function runSources(
  sources: readonly PeriodicSource[],
  board: SourceStatusBoard,
  opts: { readonly tickMs: number; readonly logger: Logger },
): RunningSources {
  const abort = new AbortController();
  const loops = sources.map(async (source) => {
    while (!abort.signal.aborted) {
      try {
        await source.poll(abort.signal);
      } catch (err) {
        // poll reports its own failures; anything else is a bug worth a line, not a dead loop.
        opts.logger.error({ source: source.name, err: (err as Error).message }, "periodic source poll threw");
      }
      await sleep(source.waitMs?.() ?? opts.tickMs, abort.signal);
    }
  });
  return {
    async stop() {
      abort.abort();
      await Promise.all(loops);
    },
    statuses: () => board.statuses(),
  };
}
