/**
 * The web pages' password hashing queue, per process. A password hash costs
 * about 0.35 s of a core and 128 MiB, so one client must not be able to queue many of them:
 *
 * - one request per client address may hold a place (`enter`); a second one from the same
 *   address meanwhile is refused ("address_busy": 429 with Retry-After), so a burst from one
 *   address never gets more than one hash ahead of anyone else;
 * - at most `concurrency` hashes run and `maxWaiting` wait (`hash`); past that the request is
 *   refused ("full": 503 with Retry-After) instead of waiting behind a queue it cannot see;
 * - a waiting request whose client has gone (its AbortSignal) leaves the queue without hashing.
 *
 * A hash that has started runs to its end (scrypt cannot be stopped), but no new one starts for
 * a client that left.
 */

export type HashRefusal = "address_busy" | "full" | "client_gone";

/** What the gate counts, for the metrics (`outcome` of signals_password_hashes_total). */
export type HashOutcome = "hashed" | HashRefusal;

/** A refusal of the gate, carried out of the work to the route that answers it. */
export class HashRefused extends Error {
  override name = "HashRefused";
  readonly reason: HashRefusal;
  constructor(reason: HashRefusal) {
    super(`password hashing refused: ${reason}`);
    this.reason = reason;
  }
}

export interface HashGateOptions {
  /** Hashes running at once (two cores: more would only queue in libuv while holding memory). */
  readonly concurrency: number;
  /** Hashes allowed to wait for a running one to end. */
  readonly maxWaiting: number;
  /** Told every outcome (a metric). */
  readonly onOutcome?: (outcome: HashOutcome) => void;
}

export const DEFAULT_HASH_GATE: HashGateOptions = Object.freeze({ concurrency: 2, maxWaiting: 8 });

/** A place held by one client address; `hash` runs its hashing work, `leave` gives the place back. */
export interface HashTicket {
  hash<T>(work: () => Promise<T>): Promise<T>;
  leave(): void;
}

export class HashGate {
  readonly #options: HashGateOptions;
  readonly #addresses = new Set<string>();
  #running = 0;
  readonly #waiting: Array<{ start: () => void; signal: AbortSignal; onAbort: () => void }> = [];

  constructor(options: HashGateOptions = DEFAULT_HASH_GATE) {
    this.#options = options;
  }

  /** Hashes running now and waiting now (for tests and the metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }

  /**
   * Takes the address's place, or throws HashRefused("address_busy") while another request of
   * the same address holds it. `signal` is the request's: aborted when its client is gone.
   */
  enter(address: string, signal: AbortSignal): HashTicket {
    if (this.#addresses.has(address)) {
      this.#options.onOutcome?.("address_busy");
      throw new HashRefused("address_busy");
    }
    this.#addresses.add(address);
    let left = false;
    return {
      hash: (work) => this.#hash(work, signal),
      leave: () => {
        if (left) return;
        left = true;
        this.#addresses.delete(address);
      },
    };
  }

  async #hash<T>(work: () => Promise<T>, signal: AbortSignal): Promise<T> {
    if (signal.aborted) return this.#refuse("client_gone");
    if (this.#running >= this.#options.concurrency) {
      if (this.#waiting.length >= this.#options.maxWaiting) return this.#refuse("full");
      await new Promise<void>((resolve, reject) => {
        const entry = {
          start: () => {
            signal.removeEventListener("abort", entry.onAbort);
            resolve();
          },
          signal,
          onAbort: () => {
            const at = this.#waiting.indexOf(entry);
            if (at >= 0) this.#waiting.splice(at, 1);
            this.#options.onOutcome?.("client_gone");
            reject(new HashRefused("client_gone"));
          },
        };
        signal.addEventListener("abort", entry.onAbort, { once: true });
        this.#waiting.push(entry);
      });
    } else {
      this.#running++;
    }
    // #running already counts this hash: a waiting one is handed the slot of the one that ended.
    try {
      const result = await work();
      this.#options.onOutcome?.("hashed");
      return result;
    } finally {
      const next = this.#waiting.shift();
      if (next) next.start();
      else this.#running--;
    }
  }

  #refuse(reason: HashRefusal): never {
    this.#options.onOutcome?.(reason);
    throw new HashRefused(reason);
  }
}
