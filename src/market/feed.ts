/**
 * The market feed: applies candle updates to the in-memory engines as they arrive, persists
 * them in batched transactions, and answers lookups (so a paid call only reads memory).
 * Lookups read the PUBLISHED readings: those of a committed market version, published after
 * the commit (this process's own, or a reload of another process's), never an engine's state
 * ahead of the store. If a batch cannot be written, the coins it touched are reloaded.
 */

import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { MARKET_UPDATED } from "../db/channels.ts";
import type { DbHandle } from "../db/client.ts";
import { errorSummary } from "../logger.ts";
import { applyCommitted } from "./apply-committed.ts";
import { BatchReloads } from "./batch-reloads.ts";
import { type CandleRow, CoinRuntime } from "./coin-runtime.ts";
import type { PendingSignalEvent, SignalChange } from "./signal-events.ts";
import type { MarketVersions, SignalReading, SignalSnapshot, SnapshotLookup } from "./snapshot.ts";
import {
  CheckpointCache,
  type CommittedChange,
  loadAllCoins,
  loadCoins,
  persistMarket,
  readCommitted,
  type SignalEventsSubscriber,
  type StoredCoin,
} from "./store.ts";
import type { Timeframe } from "./timeframes.ts";
import { TIMEFRAME_MS } from "./timeframes.ts";
import { type CandleUpdate, checkCandleFields, type RejectReason, type ValidUpdate } from "./validate.ts";

export interface IngestSummary {
  accepted: number;
  rejected: number;
  duplicates: number;
  /** The first rejections (index in the stream, symbol, reason), at most MAX_REPORTED. */
  rejections: { index: number; symbol: string; reason: RejectReason }[];
  /** Count per reason, complete. */
  reasons: Partial<Record<RejectReason, number>>;
}

export interface MarketFeedDeps {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A coin whose feed has been silent longer than this is `stale`. */
  readonly staleAfterMs: number;
  /** A close older than this when it arrives is history: its signal event does not alert. */
  readonly alertMaxDelayMs: number;
  /** Told, inside the market's transaction, about the signal events it stored (alerts subscribe here). */
  readonly onEventsStored?: SignalEventsSubscriber;
  /**
   * Told after this process's readings of these coins changed: once its own commit of them is
   * done, or once it has reloaded another process's (the live watchlists wake here).
   */
  readonly onReadingsChanged?: (symbols: readonly string[]) => void;
}

export interface IngestOptions {
  /** False for imports and backfills: their signal events are stored but never alert. */
  readonly alerts?: boolean;
  readonly onProgress?: (summary: IngestSummary) => void;
  /** Refuses a coin's updates before anything else is checked (feeder leases); null admits. */
  readonly admit?: (symbol: string) => RejectReason | null;
  /**
   * The demo feed's synthetic candles (true) or a real feed's (false, the default). A real
   * update for a coin holding demo history replaces that history; a demo update for a coin
   * holding real data is refused (`real_data_held`). See docs/feeder.md.
   */
  readonly demo?: boolean;
}

/** A coin's readings as of one committed market version: what lookups answer. */
interface PublishedCoin {
  readonly version: number;
  readonly lastUpdateAt: number;
  /** Per timeframe; a timeframe without a reading (too few closes) is absent. */
  readonly readings: ReadonlyMap<Timeframe, SignalReading>;
}

/** The readings of a coin's engines now (call when they are exactly a committed version's). */
function readingsOf(coin: CoinRuntime): Omit<PublishedCoin, "version"> {
  const readings = new Map<Timeframe, SignalReading>();
  for (const tf of coin.series.keys()) {
    const reading = coin.reading(tf);
    if (!reading || reading.atrPct === null) continue;
    // A confirmed reading's signal is the one set by the event the series last recorded.
    readings.set(tf, {
      ...reading,
      atrPct: reading.atrPct,
      signalId: reading.confirmed ? coin.signalId(tf) : null,
      ...(coin.demo ? { demo: true } : {}),
    });
  }
  return { lastUpdateAt: coin.lastUpdateAt, readings };
}

const MAX_REPORTED = 100;
const FLUSH_ROWS = 5_000;
const FLUSH_DELAY_MS = 100;

/** Creates an empty summary. */
export function emptySummary(): IngestSummary {
  return { accepted: 0, rejected: 0, duplicates: 0, rejections: [], reasons: {} };
}

export class MarketFeed implements SignalSnapshot {
  private readonly deps: MarketFeedDeps;
  /** The engines: this process's writes are applied here first, before they commit. */
  private readonly coins = new Map<string, CoinRuntime>();
  /** What lookups read: committed readings, each coin at its market version. */
  private readonly published = new Map<string, PublishedCoin>();
  /**
   * The market version whose state each coin's engines hold exactly (taken from the store, not
   * written here since): such a coin follows the next commits by stepping their candles.
   */
  private readonly followed = new Map<string, number>();
  /** The checkpoints last read: a reload reads again only the ones that changed. */
  private readonly checkpoints = new CheckpointCache();
  /** Reloads of what other processes committed, batched. */
  private readonly reloads = new BatchReloads((symbols) => this.reloadCommitted(symbols, "notice"));
  /**
   * Reloads for calls waiting to answer (catchUp), batched apart: a call asking for 8 coins
   * reloads those 8, instead of waiting behind a notice's reload of every coin a boundary closed.
   */
  private readonly callReloads = new BatchReloads((symbols) => this.reloadCommitted(symbols, "call"));
  private pending = new Map<string, CandleRow>();
  private pendingEvents = new Map<string, PendingSignalEvent>();
  /** A live signal change is waiting: flush now rather than after FLUSH_DELAY_MS. */
  private urgent = false;
  private touched = new Set<string>();
  /** Coins whose stored demo history the next commit deletes before writing their real rows. */
  private replacedDemo = new Set<string>();
  private flushChain: Promise<void> = Promise.resolve();
  private flushTimer: NodeJS.Timeout | null = null;
  /** Identifies this process's commits in market notifications. */
  private readonly writerId = randomUUID();
  /** Bumped when a batch could not be committed; a stream that overlapped it fails (its rows may be lost). */
  private failedFlushes = 0;

  constructor(deps: MarketFeedDeps) {
    this.deps = deps;
  }

  /**
   * Loads every coin's state from the store (call once at start) and follows the commits of
   * other server processes on the same database through LISTEN/NOTIFY.
   */
  async load(): Promise<void> {
    await this.deps.db.listen(MARKET_UPDATED, (payload) => this.onMarketNotice(payload));
    for (const stored of await loadAllCoins(this.deps.db, this.checkpoints)) this.adopt(stored, false);
  }

  /**
   * Brings these coins to what the store holds: a coin whose engines hold a committed version
   * steps the candles committed since (one read of candle rows and checkpoint stamps for all);
   * any other, or one whose stepped state disagrees with the stored checkpoints, is reloaded.
   */
  private async reloadCommitted(symbols: string[], forWhat: "notice" | "call"): Promise<void> {
    const started = Date.now();
    const followable = symbols.filter((symbol) => this.holdsPublished(symbol));
    const changes = await readCommitted(
      this.deps.db,
      followable.map((symbol) => {
        const coin = this.coins.get(symbol)!;
        return { symbol, baseTf: coin.baseTf, after: coin.lastClosedOpenTime };
      }),
    );
    const stepped = new Set(changes.filter((change) => this.follow(change)).map((change) => change.symbol));
    const read = Date.now();
    const loaded = await loadCoins(
      this.deps.db,
      symbols.filter((symbol) => !stepped.has(symbol)),
      this.checkpoints,
    );
    for (const stored of loaded) this.adopt(stored, true);
    this.deps.logger.debug(
      {
        coins: symbols.length,
        stepped: stepped.size,
        steppedMs: read - started,
        reloaded: loaded.length,
        for: forWhat,
      },
      "market: followed coins another process committed",
    );
  }

  /** Whether a coin's engines hold exactly the state of the version its lookups answer. */
  private holdsPublished(symbol: string): boolean {
    const version = this.followed.get(symbol);
    return version !== undefined && version === this.published.get(symbol)?.version && !this.touched.has(symbol);
  }

  /** Steps a coin's engines to a committed change and publishes it; false when it must be reloaded instead. */
  private follow(change: CommittedChange): boolean {
    const { symbol, version } = change;
    // Reads run side by side (a notice's, a call's): one that finished first may have published this or later.
    if (version <= (this.published.get(symbol)?.version ?? 0)) return true;
    const coin = this.coins.get(symbol);
    if (!coin || !this.holdsPublished(symbol)) return false;
    if (!applyCommitted(coin, change)) {
      // Left part-way: only a reload may replace it now (the next adopt does).
      this.followed.delete(symbol);
      return false;
    }
    this.followed.set(symbol, version);
    this.publish(symbol, { version, ...readingsOf(coin) });
    return true;
  }

  /** Takes a coin as the store holds it: publishes it, and runs its engines unless ours have unsaved updates. */
  private adopt(stored: StoredCoin, keepLocal: boolean): void {
    const { runtime, version } = stored;
    // Reloads run side by side (a notice's, a call's): an older read never replaces a newer state.
    if ((this.published.get(runtime.symbol)?.version ?? 0) > version) return;
    if (!(keepLocal && this.touched.has(runtime.symbol))) {
      this.coins.set(runtime.symbol, runtime);
      this.followed.set(runtime.symbol, version);
    }
    this.publish(runtime.symbol, { version, ...readingsOf(runtime) });
  }

  /** Makes a committed version's readings what lookups answer; never goes back to an older version. */
  private publish(symbol: string, coin: PublishedCoin): void {
    const current = this.published.get(symbol);
    if (!current || current.version < coin.version) this.published.set(symbol, coin);
  }

  private onMarketNotice(payload: string): void {
    let notice: { writer?: string; symbols?: string[] };
    try {
      notice = JSON.parse(payload) as typeof notice;
    } catch {
      return;
    }
    if (notice.writer === this.writerId || !Array.isArray(notice.symbols)) return;
    // One writer per coin is the rule; if this process also has unsaved updates for a coin,
    // reloading would drop them from memory while their rows are still written. Keep ours.
    const clash = notice.symbols.filter((symbol) => this.touched.has(symbol));
    if (clash.length > 0)
      this.deps.logger.warn(
        { symbols: clash },
        "another process wrote coins this process is writing; keeping local state",
      );
    const symbols = notice.symbols;
    const reload = symbols.includes("*")
      ? loadAllCoins(this.deps.db, this.checkpoints).then((all) => {
          for (const stored of all) this.adopt(stored, true);
        })
      : this.reloads.reload(symbols);
    // The live watchlists re-read once the published readings are the committed ones.
    reload
      .then(() => this.deps.onReadingsChanged?.(symbols))
      .catch((err: unknown) =>
        this.deps.logger.warn({ err: errorSummary(err) }, "could not follow another process's market update"),
      );
  }

  /** The market version of each coin's published readings (0: none published). */
  versions(symbols: readonly string[]): MarketVersions {
    const out: Record<string, number> = {};
    for (const symbol of symbols) out[symbol] = this.published.get(symbol)?.version ?? 0;
    return out;
  }

  /**
   * Brings the published readings of these coins to at least the wanted versions by reloading
   * them (sharing reloads already under way), until the deadline (epoch ms, wall time). False
   * when a reload failed or the deadline passed first.
   */
  async catchUp(wanted: MarketVersions, deadline: number): Promise<boolean> {
    for (;;) {
      const behind = Object.keys(wanted).filter(
        (symbol) => (this.published.get(symbol)?.version ?? 0) < wanted[symbol]!,
      );
      if (behind.length === 0) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<"expired">((resolve) => (timer = setTimeout(() => resolve("expired"), left)));
      const reloaded = this.callReloads.reload(behind).then(
        () => "reloaded" as const,
        () => "failed" as const,
      );
      const outcome = await Promise.race([reloaded, expired]);
      clearTimeout(timer);
      if (outcome !== "reloaded") return false;
    }
  }

  /** Current reading of a coin on a timeframe, or why there is none. */
  lookup(symbol: string, tf: Timeframe, now: number): SnapshotLookup {
    const coin = this.published.get(symbol);
    if (!coin) return { ok: false, reason: "unknown_symbol" };
    if (now - coin.lastUpdateAt > this.deps.staleAfterMs) return { ok: false, reason: "stale" };
    const reading = coin.readings.get(tf);
    return reading ? { ok: true, reading } : { ok: false, reason: "no_data" };
  }

  /** When each coin's feed last delivered an update (epoch ms), for freshness metrics. */
  freshness(): { symbol: string; lastUpdateAt: number }[] {
    return [...this.published].map(([symbol, coin]) => ({ symbol, lastUpdateAt: coin.lastUpdateAt }));
  }

  /** Symbols the feed has published, sorted. */
  symbols(): string[] {
    return [...this.published.keys()].sort();
  }

  /**
   * Applies a stream of updates in order and persists them; resolves once everything accepted
   * is committed. `order` tracks the stream's own time order per (symbol, tf).
   */
  async ingest(
    source: Iterable<CandleUpdate> | AsyncIterable<CandleUpdate>,
    options: IngestOptions = {},
  ): Promise<IngestSummary> {
    const { onProgress } = options;
    const alerts = options.alerts !== false;
    const summary = emptySummary();
    const order = new Map<string, number>();
    const failedAtStart = this.failedFlushes;
    // The error is raised only once the failed batch's reload has finished, so memory equals the
    // store when the sender hears of it and a resend at once is not refused for the same failure.
    const lost = async () => {
      await this.flushChain;
      return new Error("a batch of this stream could not be committed; resend it (duplicates are ignored)");
    };
    let index = 0;
    const started = Date.now();
    let closes = 0;
    for await (const update of source) {
      if (update.closed) closes++;
      // A background flush failed and reloaded the coins: stop before building on the reloaded state.
      if (this.failedFlushes !== failedAtStart) throw await lost();
      this.applyOne(update, index++, order, summary, { alerts, admit: options.admit, demo: options.demo === true });
      if (this.pending.size >= FLUSH_ROWS) {
        await this.flush();
        onProgress?.(summary);
      } else {
        this.scheduleFlush();
      }
    }
    await this.flush();
    if (this.failedFlushes !== failedAtStart) throw await lost();
    onProgress?.(summary);
    this.deps.logger.debug(
      { updates: index, closes, accepted: summary.accepted, ms: Date.now() - started },
      "market: ingest stream committed",
    );
    return summary;
  }

  private reject(summary: IngestSummary, index: number, symbol: string, reason: RejectReason): void {
    summary.rejected++;
    summary.reasons[reason] = (summary.reasons[reason] ?? 0) + 1;
    if (summary.rejections.length < MAX_REPORTED)
      summary.rejections.push({ index, symbol: symbol.slice(0, 32), reason });
  }

  private applyOne(
    raw: CandleUpdate,
    index: number,
    order: Map<string, number>,
    summary: IngestSummary,
    { alerts, admit, demo }: { alerts: boolean; admit: IngestOptions["admit"]; demo: boolean },
  ): void {
    const now = this.deps.clock();
    const update = {
      ...raw,
      symbol: String(raw.symbol ?? "")
        .trim()
        .toUpperCase(),
    };
    const refused = admit?.(update.symbol) ?? null;
    if (refused) {
      this.reject(summary, index, update.symbol, refused);
      return;
    }
    const reason = checkCandleFields(update, now);
    if (reason) {
      this.reject(summary, index, update.symbol, reason);
      return;
    }
    const valid = update as ValidUpdate;
    const streamKey = `${valid.symbol}/${valid.tf}`;
    const previous = order.get(streamKey);
    if (previous !== undefined && valid.openTime < previous) {
      this.reject(summary, index, valid.symbol, "out_of_order");
      return;
    }
    order.set(streamKey, valid.openTime);
    let coin = this.coins.get(valid.symbol);
    if (coin && coin.demo !== demo) {
      if (demo) {
        this.reject(summary, index, valid.symbol, "real_data_held");
        return;
      }
      this.dropDemoHistory(coin.symbol);
      coin = undefined;
    }
    if (!coin) {
      coin = new CoinRuntime(valid.symbol, valid.tf, now, undefined, demo);
      this.coins.set(valid.symbol, coin);
    }
    if (valid.tf !== coin.baseTf) {
      this.reject(summary, index, valid.symbol, "not_base_timeframe");
      return;
    }
    const rows: CandleRow[] = [];
    const changes: SignalChange[] = [];
    const outcome = coin.apply(valid, rows, changes);
    if (outcome === "duplicate") {
      summary.duplicates++;
      return;
    }
    if (outcome === "out_of_order") {
      this.reject(summary, index, valid.symbol, "out_of_order");
      return;
    }
    coin.lastUpdateAt = now;
    // Ahead of the store now: the coin follows no other writer until it is reloaded.
    this.followed.delete(coin.symbol);
    summary.accepted++;
    for (const row of rows) this.pending.set(`${row.symbol}/${row.tf}/${row.openTime}`, row);
    for (const change of changes) this.queueEvent(change, alerts, now);
    this.touched.add(coin.symbol);
  }

  /**
   * A real update reached a coin that holds demo history: forget the demo runtime and its
   * unsaved rows, and have the next commit delete the stored demo history first, in the same
   * transaction as the first real rows (nothing real is ever read next to a demo row).
   */
  private dropDemoHistory(symbol: string): void {
    this.coins.delete(symbol);
    this.followed.delete(symbol);
    for (const [key, row] of this.pending) if (row.symbol === symbol) this.pending.delete(key);
    for (const [id, event] of this.pendingEvents) if (event.symbol === symbol) this.pendingEvents.delete(id);
    this.replacedDemo.add(symbol);
    this.deps.logger.warn(
      { symbol },
      "real data for a coin that held demo history: the demo history is deleted with the first real commit",
    );
  }

  /** Queues a signal change; one from a candle that closed in real time alerts and is flushed at once. */
  private queueEvent(change: SignalChange, alerts: boolean, now: number): void {
    const closeTime = change.candleOpenTime + TIMEFRAME_MS[change.tf];
    const live = alerts && closeTime >= now - this.deps.alertMaxDelayMs;
    this.pendingEvents.set(change.id, { ...change, live });
    if (live) this.urgent = true;
  }

  private scheduleFlush(): void {
    if (this.pending.size === 0) return;
    // Batching saves commits; a live signal change skips the wait so its alert is not delayed.
    if (this.flushTimer && !this.urgent) return;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = setTimeout(
      () => {
        this.flushTimer = null;
        this.flush().catch((err: unknown) =>
          this.deps.logger.error({ err: errorSummary(err) }, "candle flush failed; touched coins reloaded"),
        );
      },
      this.urgent ? 0 : FLUSH_DELAY_MS,
    );
  }

  /** Commits everything pending; on failure reloads the touched coins and rethrows. */
  flush(): Promise<void> {
    const run = this.flushChain.then(() => this.flushNow());
    this.flushChain = run.catch(() => {});
    return run;
  }

  private async flushNow(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    const touched = [...this.touched];
    const events = [...this.pendingEvents.values()];
    const replacedDemo = [...this.replacedDemo];
    this.pending = new Map();
    this.touched = new Set();
    this.pendingEvents = new Map();
    this.replacedDemo = new Set();
    this.urgent = false;
    const started = Date.now();
    try {
      const coins = touched.map((s) => this.coins.get(s)!).filter(Boolean);
      // Everything applied so far is in this batch: the engines are exactly what it commits.
      const readings = coins.map(readingsOf);
      const versions = await persistMarket(this.deps.db, {
        rows,
        touched: coins,
        events,
        replacedDemo,
        writer: this.writerId,
        now: this.deps.clock(),
        ...(this.deps.onEventsStored ? { onEventsStored: this.deps.onEventsStored } : {}),
      });
      for (const [i, coin] of coins.entries())
        this.publish(coin.symbol, { version: versions.get(coin.symbol) ?? 0, ...readings[i]! });
      this.deps.onReadingsChanged?.(touched);
      this.deps.logger.debug(
        { rows: rows.length, coins: coins.length, events: events.length, ms: Date.now() - started },
        "market: batch committed",
      );
    } catch (err) {
      // Streams that overlapped this batch fail: from now on (they stop applying updates), and
      // after the reload (one that started during it built on state the reload replaced).
      this.failedFlushes++;
      try {
        await this.reload(touched);
      } finally {
        this.failedFlushes++;
      }
      throw err;
    }
  }

  /** Replaces the in-memory runtime of these coins with what the store holds. */
  private async reload(symbols: string[]): Promise<void> {
    const stored = new Map(
      (await loadCoins(this.deps.db, symbols, this.checkpoints)).map((coin) => [coin.runtime.symbol, coin]),
    );
    for (const symbol of symbols) {
      const coin = stored.get(symbol);
      if (coin) this.adopt(coin, false);
      else {
        this.coins.delete(symbol);
        this.followed.delete(symbol);
      }
    }
  }

  /** Flushes and stops the timer (shutdown). */
  async close(): Promise<void> {
    await this.flush().catch((err: unknown) =>
      this.deps.logger.error({ err: errorSummary(err) }, "final candle flush failed"),
    );
  }
}
