/**
 * The coin leases: one round every F/9 (F = FEED_FAILOVER) renews what this feeder leads and
 * claims what has expired. A coin won starts feeding; a coin lost, or not renewed in time,
 * stops. Leases last two thirds of F, so a dead leader's coins are taken within F.
 */
import type { Logger } from "pino";
import { errorSummary } from "../logger.ts";
import type { CandleFeeds } from "./candle-feeds.ts";
import type { FeederProblem } from "./feed-metrics.ts";
import type { ServerClient } from "./server-client.ts";
import { sleep } from "./timing.ts";

export interface LeaseKeeperDeps {
  readonly failoverMs: number;
  readonly server: ServerClient;
  readonly feeds: CandleFeeds;
  /** The coins the exchange lists (the ones worth leasing), unlisted ones left out at each round. */
  readonly listed: () => string[];
  readonly logger: Logger;
  readonly now: () => number;
}

export class LeaseKeeper {
  readonly #deps: LeaseKeeperDeps;
  // Leases last two thirds of FEED_FAILOVER (F) and are renewed every F/9: a dead leader's lease
  // ends within 2/3 F, and a standby polling as often takes the coin within F.
  readonly #ttlMs: number;
  readonly #renewMs: number;
  #heldUntil = 0;
  /** Set when coins were given up for a lease this feeder could not keep; cleared by the next good round. */
  #lost: FeederProblem | null = null;
  #loop: Promise<void> = Promise.resolve();

  constructor(deps: LeaseKeeperDeps) {
    this.#deps = deps;
    this.#ttlMs = Math.max(1_000, Math.round((deps.failoverMs * 2) / 3));
    // One round both renews what it leads and claims what has expired: every F/9 (≤ F/6).
    this.#renewMs = Math.max(200, Math.round(deps.failoverMs / 9));
  }

  /** The lease problem /healthz names, or null. */
  problem(): FeederProblem | null {
    return this.#lost;
  }

  /** Records that `symbols` stopped being fed because their lease could not be kept. */
  lose(symbols: string[], why: string): void {
    this.#lost = {
      cause: "lease_lost",
      since: this.#lost?.since ?? this.#deps.now(),
      message: `stopped feeding ${symbols.join(", ")}: ${why}`,
    };
  }

  /** Runs a round at once, then every renewal interval until `signal` aborts. */
  start(signal: AbortSignal): void {
    this.#loop = (async () => {
      while (!signal.aborted) {
        await this.#round();
        await sleep(this.#renewMs, signal);
      }
    })();
  }

  /** Resolves when the loop has ended (after its signal aborted). */
  stopped(): Promise<void> {
    return this.#loop;
  }

  async #round(): Promise<void> {
    const { server, feeds, logger, now } = this.#deps;
    const sent = now();
    try {
      const leases = await server.acquireLeases(this.#deps.listed(), this.#ttlMs);
      this.#heldUntil = sent + this.#ttlMs;
      this.#lost = null;
      const won = leases.filter((l) => l.held && !feeds.has(l.symbol)).map((l) => l.symbol);
      for (const lost of leases.filter((l) => !l.held && feeds.has(l.symbol))) {
        logger.warn({ symbol: lost.symbol, holder: lost.holder }, "lease lost; standing by");
        await feeds.drop(lost.symbol);
      }
      await feeds.take(won);
    } catch (err) {
      logger.warn({ err: errorSummary(err) }, "lease renewal failed");
      // Past our own deadline the service would refuse us anyway: stop rather than guess.
      const led = feeds.led();
      if (now() > this.#heldUntil && led.length > 0) {
        this.lose(led, "their leases could not be renewed in time");
        for (const symbol of led) await feeds.drop(symbol);
      }
    }
  }
}
