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
