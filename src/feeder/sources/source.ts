import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { DataIngestClient } from "./ingest-client.ts";

/**
 * What the feeder runs periodically next to the candles (derivatives, news, fundamentals,
 * macro): a name and a `poll` that does whatever work is due (the runner, run.ts, only wakes
 * it), reporting successes and errors as it goes.
 */
export interface PeriodicSource {
  readonly name: string;
  /** Fetches and pushes what is due now; resolves when done. Errors are reported, not thrown. */
  poll(signal: AbortSignal): Promise<void>;
  /** How long (ms) to wait after the last poll before the next; without it, the runner's tick. */
  waitMs?(): number;
}

/** Where a source records its outcomes (bound to the source's name). */
export interface SourceReporter {
  success(): void;
  failure(message: string): void;
}

/** What every context source is built from, with its own part of the configuration. */
export interface SourceDeps<C> {
  readonly config: C;
  /** One provider request's time limit (ms). */
  readonly timeoutMs: number;
  readonly ingest: DataIngestClient;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly report: SourceReporter;
}
