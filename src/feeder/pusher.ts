/**
 * One ordered queue of candle updates for every coin, flushed as one PushCandles call at a
 * time (per coin, order is the order of enqueueing). A failed call is retried with backoff;
 * updates the service refuses for lack of the lease are reported to the coin's owner.
 *
 * A failed call's outcome is unknown (a timeout or a cut connection after the service applied
 * it, in part or whole), so before the retry the pusher asks the service where each coin's
 * stored history ends and drops what it already holds: nothing is sent twice.
 */
import type { Logger } from "pino";
import { errorSummary } from "../logger.ts";
import { backoffMs } from "../retry.ts";
import type { FeedMetrics } from "./feed-metrics.ts";
import type { PushItem, ServerClient } from "./server-client.ts";
import { sleep } from "./timing.ts";

const MAX_BATCH = 5_000;
/** How long a push waits for the updates arriving with its first one (a boundary's burst). */
const GATHER_MS = 10;
/** GetFeedState's limit of symbols per call. */
const MAX_STATE_SYMBOLS = 1_000;
/** Longest wait between two tries of a failed push (the backoff's ceiling doubles from 250 ms up to this). */
export const PUSH_RETRY_MAX_MS = 15_000;

interface Queued extends PushItem {
  readonly mode: "live" | "backfill";
}

export class Pusher {
  private queue: Queued[] = [];
  /** Each coin's last queued update (it may have been sent since). */
  private readonly lastQueued = new Map<string, Queued>();
  /** The updates of the push in flight. */
  private sending = new Set<Queued>();
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly idle = new Set<() => void>();

  private readonly client: ServerClient;
  private readonly metrics: FeedMetrics;
  private readonly logger: Logger;
  private readonly onLeaseLost: (symbol: string) => void;

  constructor(client: ServerClient, metrics: FeedMetrics, logger: Logger, onLeaseLost: (symbol: string) => void) {
    this.client = client;
    this.metrics = metrics;
    this.logger = logger;
    this.onLeaseLost = onLeaseLost;
  }

  /**
   * Queues updates and starts a flush if none is running. A forming update replaces its coin's
   * queued, unsent forming update of the same candle when that is the coin's last one queued:
   * behind a slow push, a coin's forming prices collapse to the latest instead of piling up in
   * front of the next closes (the service would apply each in turn only to keep the last).
   */
  enqueue(items: readonly PushItem[], mode: "live" | "backfill"): void {
    if (this.stopped) return;
    for (const item of items) {
      const queued: Queued = { ...item, mode };
      const last = this.lastQueued.get(item.symbol);
      this.lastQueued.set(item.symbol, queued);
      if (
        last &&
        !item.closed &&
        !last.closed &&
        last.mode === mode &&
        last.tf === item.tf &&
        last.candle.openTime === item.candle.openTime &&
        !this.sending.has(last)
      ) {
        const at = this.queue.lastIndexOf(last);
        if (at >= 0) {
          this.queue[at] = queued;
          continue;
        }
      }
      this.queue.push(queued);
    }
    // The first call waits GATHER_MS for the updates arriving with this one: a boundary's closes
    // come as hundreds of websocket messages read over several turns of the event loop, and a
    // call started at the first of them carried that one close alone, the rest waiting for its
    // round trip (and the server's commit of one coin).
    this.running ??= new Promise<void>((resolve) => setTimeout(resolve, GATHER_MS))
      .then(() => this.drain())
      .finally(() => {
        this.running = null;
        if (this.queue.length > 0 && !this.stopped) this.enqueue([], "live");
        else for (const resolve of this.idle) resolve();
      });
  }

  /** Drops a coin's queued updates (its lease was lost or it stopped). */
  discard(symbol: string): void {
    this.queue = this.queue.filter((q) => q.symbol !== symbol);
    this.lastQueued.delete(symbol);
  }

  /** Resolves once everything queued so far has been pushed. */
  flushed(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.add(resolve));
  }

  /** Stops pushing (shutdown); what is still queued is left to the next leader's backfill. */
  stop(): void {
    this.stopped = true;
    this.queue = [];
    this.lastQueued.clear();
  }

  private async drain(): Promise<void> {
    let failures = 0;
    /** Coins of a failed call: the service may hold part of it. */
    let unsure = new Set<string>();
    while (this.queue.length > 0 && !this.stopped) {
      if (unsure.size > 0) {
        try {
          await this.dropHeld(unsure);
          unsure = new Set();
        } catch (err) {
          failures++;
          this.logger.warn(
            { err: errorSummary(err), attempt: failures },
            "could not ask the service what it holds after a failed push; retrying",
          );
          await sleep(backoffMs(failures, 250, PUSH_RETRY_MAX_MS));
          continue;
        }
        if (this.queue.length === 0) break;
      }
      const mode = this.queue[0]!.mode;
      let n = 0;
      while (n < this.queue.length && n < MAX_BATCH && this.queue[n]!.mode === mode) n++;
      const batch = this.queue.slice(0, n);
      this.sending = new Set(batch);
      try {
        const started = Date.now();
        const result = await this.client.push(batch, mode);
        this.logger.debug(
          { updates: batch.length, closes: batch.filter((b) => b.closed).length, ms: Date.now() - started },
          "pushed",
        );
        // The queue may have changed during the call (a coin's updates discarded, new ones
        // queued): remove exactly what was sent, never the first n of what is there now.
        const sent = new Set<Queued>(batch);
        this.queue = this.queue.filter((q) => !sent.has(q));
        failures = 0;
        this.account(batch, result);
      } catch (err) {
        failures++;
        for (const item of batch) unsure.add(item.symbol);
        this.logger.warn(
          { err: errorSummary(err), updates: batch.length, attempt: failures },
          "candle push failed; retrying",
        );
        await sleep(backoffMs(failures, 250, PUSH_RETRY_MAX_MS));
      } finally {
        this.sending = new Set();
      }
    }
  }

  /**
   * Removes from the queue the updates of `symbols` at or before the last closed candle the
   * service holds (its answer covers every update it has applied, committed or not): those
   * are final there, and sending them again would only be ignored as duplicates.
   */
  private async dropHeld(symbols: Set<string>): Promise<void> {
    const held = new Map<string, number>();
    const list = [...symbols];
    for (let i = 0; i < list.length; i += MAX_STATE_SYMBOLS) {
      for (const point of await this.client.resumePoints(list.slice(i, i + MAX_STATE_SYMBOLS))) {
        if (point.known) held.set(point.symbol, point.lastClosedOpenTime);
      }
    }
    const before = this.queue.length;
    this.queue = this.queue.filter((q) => !(held.has(q.symbol) && q.candle.openTime <= held.get(q.symbol)!));
    const dropped = before - this.queue.length;
    if (dropped > 0)
      this.logger.info(
        { updates: dropped, coins: held.size },
        "the service already held part of a failed push; not sending it again",
      );
  }

  private account(batch: readonly Queued[], result: Awaited<ReturnType<ServerClient["push"]>>): void {
    const lost = new Set<string>();
    const refused = new Map<string, number>();
    for (const r of result.rejections) {
      this.metrics.rejected.inc({ symbol: r.symbol, reason: r.reason });
      refused.set(r.symbol, (refused.get(r.symbol) ?? 0) + 1);
      if (r.reason === "lease_not_held") lost.add(r.symbol);
      else this.logger.warn({ symbol: r.symbol, reason: r.reason }, "the service refused a candle update");
    }
    for (const item of batch)
      if (!refused.has(item.symbol))
        this.metrics.pushed.inc({ symbol: item.symbol, state: item.closed ? "closed" : "forming" });
    if (result.duplicates > 0) {
      const symbols = [...new Set(batch.filter((b) => b.closed).map((b) => b.symbol))];
      this.logger.warn(
        { duplicates: result.duplicates, symbols },
        "the service already had some pushed closed candles",
      );
      if (symbols.length === 1) this.metrics.duplicates.inc({ symbol: symbols[0]! }, result.duplicates);
      else this.metrics.duplicates.inc({ symbol: "*" }, result.duplicates);
    }
    for (const symbol of lost) {
      this.discard(symbol);
      this.onLeaseLost(symbol);
    }
  }
}
