import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { DataIngestClient } from "./ingest-client.ts";

/**
 * The shape every context source has: a name and a `poll` that does whatever work is due
 * by the clock (the scheduler only wakes it), reporting successes and errors as it goes.
 */
export interface ContextSource {
  readonly name: string;
  /** Fetches and pushes what is due now; resolves when done. Errors are reported, not thrown. */
  poll(signal: AbortSignal): Promise<void>;
}

/** Where a source records its outcomes (bound to the source's name). */
export interface SourceReporter {
  success(): void;
  failure(message: string): void;
}

/** What every source is built from, with its own part of the configuration. */
export interface SourceDeps<C> {
  readonly config: C;
  /** One provider request's time limit (ms). */
  readonly timeoutMs: number;
  readonly ingest: DataIngestClient;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly report: SourceReporter;
}
