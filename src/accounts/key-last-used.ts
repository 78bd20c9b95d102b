/**
 * "Last used" of API keys without a write per call. An accepted call only notes its key's hash
 * and time in memory (a Map set: no I/O, no await on the call's path); a timer writes what was
 * noted once per window in ONE batched UPDATE, so each key's row is written at most once per
 * window however many calls it made. `close()` writes what is left (on shutdown).
 *
 * The price: a crash loses at most one window of "last used" times (never a charge: those are
 * in the ledger), and a page may show a time up to one window old.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Logger } from "pino";
import type { Counter } from "prom-client";
import type { DbHandle } from "../db/client.ts";
import { apiKeys } from "../db/schema.ts";
import { errorSummary } from "../logger.ts";

/** Newer times win: a late flush never moves a key's time backwards (another process may have written a newer one). */
const FLUSH_SQL = `
  UPDATE api_keys k SET last_used_at = GREATEST(k.last_used_at, u.at)
    FROM unnest($1::text[], $2::timestamptz[]) AS u(key_hash, at)
   WHERE k.key_hash = u.key_hash`;

export interface KeyLastUsedOptions {
  /** How often noted times are written (ms); each key is written at most once per window. */
  readonly windowMs: number;
  readonly logger?: Logger;
  /** Counts UPDATE statements sent and key rows they carried. */
  readonly flushes?: Counter;
  readonly rowsWritten?: Counter;
}

export class KeyLastUsed {
  private readonly db: DbHandle;
  private readonly options: KeyLastUsedOptions;
  /** Key hash → newest accepted call (epoch ms) not yet written. */
  private noted = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | null = null;

  constructor(db: DbHandle, options: KeyLastUsedOptions) {
    this.db = db;
    this.options = options;
    this.timer = setInterval(() => void this.flush(), options.windowMs);
    this.timer.unref();
  }

  /** Notes an accepted call with this key (called on the call's path: memory only). */
  touch(keyHash: string, at: number): void {
    const known = this.noted.get(keyHash);
    if (known === undefined || at > known) this.noted.set(keyHash, at);
  }

  /** Writes the noted times in one statement (one at a time; a failed write keeps them for the next). */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => (this.flushing = null));
    return this.flushing;
  }

  async write(): Promise<void> {
    if (this.noted.size === 0) return;
    const batch = this.noted;
    this.noted = new Map();
    const hashes = [...batch.keys()];
    try {
      await this.db.prepared(FLUSH_SQL, [hashes, hashes.map((h) => new Date(batch.get(h)!).toISOString())]);
      this.options.flushes?.inc();
      this.options.rowsWritten?.inc(hashes.length);
    } catch (err) {
      for (const [hash, at] of batch) this.touch(hash, at);
      this.options.logger?.warn(
        { err: errorSummary(err), keys: hashes.length },
        "api key last-used times not written; retrying next window",
      );
    }
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }
}

/** When the account's valid key was made and last used (null: no key, or never used). */
export async function activeKeyTimes(
  handle: DbHandle,
  accountId: number,
): Promise<{ createdAt: Date; lastUsedAt: Date | null } | null> {
  const [row] = await handle.db
    .select({ createdAt: apiKeys.createdAt, lastUsedAt: apiKeys.lastUsedAt })
    .from(apiKeys)
    .where(and(eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)));
  return row ?? null;
}
