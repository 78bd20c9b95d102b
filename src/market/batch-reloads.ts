/**
 * Reloads of coins from the store, joined into batches: one read for every coin asked for
 * while the previous batch ran (a boundary touches every coin at once; a read per coin was
 * thousands of statements). A request is settled by a batch that STARTED after it, since a
 * batch already under way may have read the store before the commit its caller waits for.
 */
export class BatchReloads {
  private readonly load: (symbols: string[]) => Promise<void>;
  private waiting = new Set<string>();
  private next: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | null = null;
  private running = false;

  /** `load` reads the coins and adopts what it read. */
  constructor(load: (symbols: string[]) => Promise<void>) {
    this.load = load;
  }

  /** Resolves once a batch that started after this call has reloaded the coins; rejects if it failed. */
  reload(symbols: readonly string[]): Promise<void> {
    if (symbols.length === 0) return Promise.resolve();
    for (const symbol of symbols) this.waiting.add(symbol);
    if (!this.next) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.next = { promise, resolve, reject };
    }
    const settled = this.next.promise;
    this.startNext();
    return settled;
  }

  private startNext(): void {
    if (this.running || !this.next) return;
    const batch = this.next;
    const symbols = [...this.waiting];
    this.next = null;
    this.waiting = new Set();
    this.running = true;
    this.load(symbols)
      .then(batch.resolve, batch.reject)
      .finally(() => {
        this.running = false;
        this.startNext();
      });
  }
}
