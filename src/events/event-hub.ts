/**
 * Wakes the internal event streams of this process when signal events are committed (by any
 * process: the writers NOTIFY on commit). A stream remembers the wake-up count before it
 * reads, so an event committed between its read and its wait is never slept through.
 */

import { SIGNAL_EVENTS } from "../db/channels.ts";
import type { DbHandle } from "../db/client.ts";

export class SignalEventHub {
  private count = 0;
  private readonly waiters = new Set<() => void>();
  private isClosed = false;

  /** Subscribes to the database's notifications (call once). */
  async start(db: DbHandle): Promise<void> {
    await db.listen(SIGNAL_EVENTS, () => this.notify());
  }

  /** Wake-ups so far; pass it to wait(). */
  get wakeups(): number {
    return this.count;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Streams waiting for the next event right now (caught up and tailing); for health checks and tests. */
  get waiting(): number {
    return this.waiters.size;
  }

  notify(): void {
    this.count++;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves on the next wake-up after `since`, on abort, on close, or after timeoutMs. */
  wait(since: number, signal: AbortSignal, timeoutMs: number): Promise<void> {
    if (this.count !== since || this.isClosed || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener("abort", done, { once: true });
      this.waiters.add(done);
    });
  }

  /** Ends every stream's wait (shutdown). */
  close(): void {
    this.isClosed = true;
    this.notify();
  }
}
