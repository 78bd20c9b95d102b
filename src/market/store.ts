/**
 * Candle store and engine checkpoints in Postgres (Drizzle). Candles, the checkpoints of the
 * series they moved and the coin's freshness are written in one transaction.
 */
import { and, asc, desc, eq, gte, inArray, sql } from "drizzle-orm";
import { MARKET_UPDATED, SIGNAL_EVENTS } from "../db/channels.ts";
import { type Database, type DbHandle, resultRows, type Transaction } from "../db/client.ts";
import { candles, coins, seriesState } from "../db/schema.ts";
import { type Candle, restoreState, runSeries, serializeState } from "../engine/index.ts";
import {
  type CandleRow,
  CoinRuntime,
  checkpointDue,
  emptySeries,
  mergeCandle,
  type SeriesRuntime,
} from "./coin-runtime.ts";
import { chainHash, confirmedAtOf, GENESIS_HASH } from "./event-chain.ts";
import type { PendingSignalEvent } from "./signal-events.ts";
import type { Timeframe } from "./timeframes.ts";
import { bucketStart, derivedTimeframes, isTimeframe } from "./timeframes.ts";

/** Closed candles replayed when a checkpoint is missing or from an older engine version. */
export const WARMUP_CANDLES = 2_000;
const INSERT_CHUNK = 10_000;
/** Rows per multi-row upsert of coins / checkpoints (5 parameters a row, far below the 65,535 limit). */
const UPSERT_CHUNK = 2_000;

/**
 * Every transaction that inserts signal events takes this lock first and holds it to commit,
 * so event seq order is commit order: a stream reader that has seen seq n can never later
 * find a smaller seq appear. (Writers of different coins in different processes would
 * otherwise commit out of sequence order.)
 */
const SIGNAL_EVENTS_LOCK = 0x51_6e_01;

/** A signal event the market's transaction stored (a replayed one is not stored again). */
export interface StoredSignalEvent {
  readonly seq: number;
  readonly id: string;
  readonly symbol: string;
  readonly tf: string;
  /** From a candle that closed in real time (not an import, a backfill or a late close). */
  readonly live: boolean;
}

/**
 * Called inside the market's transaction with the events it stored: what it writes commits
 * with them or not at all (alerts/signal-alerts.ts queues the members' alerts this way).
 */
export type SignalEventsSubscriber = (
  tx: Transaction,
  stored: readonly StoredSignalEvent[],
  now: number,
) => Promise<void>;

export interface MarketWrite {
  rows: CandleRow[];
  /** Coins whose checkpoints and freshness are written. */
  touched: CoinRuntime[];
  /** Signal changes of this batch. */
  events: PendingSignalEvent[];
  /** Coins whose stored demo history is deleted first, in this transaction (their first real rows follow). */
  replacedDemo?: readonly string[];
  /** Told about the events stored, in the same transaction. */
  onEventsStored?: SignalEventsSubscriber;
  /** Identifies the writing process in the market notification. */
  writer: string;
  /** The service clock: whose subscriptions are active. */
  now: number;
}

/**
 * Writes candle rows, the checkpoints of the given coins' series, their freshness, their market
 * versions and the signal events in ONE transaction (with whatever the events' subscriber
 * writes), and notifies other processes (delivered on commit) with `{writer, symbols}`.
 * Resolves, after the commit, to each touched coin's new market version.
 */
export async function persistMarket(handle: DbHandle, write: MarketWrite): Promise<Map<string, number>> {
  const { rows, touched, events, writer, now } = write;
  // A coin's rows all share its provenance (a real push replaces demo history first).
  const demoCoins = new Set(touched.filter((c) => c.demo).map((c) => c.symbol));
  const flag = (demo: boolean) => (demo ? "t" : "f");
  // Checkpoints of the series a close stepped since the store's (forming updates step none),
  // taken now, before the first await: the engines may move on while this transaction runs.
  const updatedAt = new Date();
  const checkpointed: { series: SeriesRuntime; count: number }[] = [];
  const states = touched.flatMap((coin) =>
    [...coin.series.values()].filter(checkpointDue).map((s) => {
      checkpointed.push({ series: s, count: s.state.count });
      return {
        symbol: coin.symbol,
        tf: s.tf,
        // The engine's JSON as the jsonb parameter itself: parsing it back into an object only for
        // drizzle to stringify it again cost ~15 ms of the lead's CPU (and its garbage) per 2,000
        // checkpoints at a boundary. The string is also the snapshot taken before the first await.
        state: sql`${serializeState(s.state)}::jsonb`,
        lastClosedOpenTime: s.state.lastOpenTime,
        updatedAt,
      };
    }),
  );
  // Symbol order: concurrent writers lock the rows in the same order.
  states.sort((a, b) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0));
  const versions = await handle.db.transaction(async (tx) => {
    if (write.replacedDemo && write.replacedDemo.length > 0) await deleteDemoHistory(tx, write.replacedDemo);
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK);
      // unnest() of one array per column: one statement with 10 parameters, however many rows.
      await tx.execute(sql`
        INSERT INTO candles (symbol, tf, open_time, open, high, low, close, volume, closed, demo)
        SELECT * FROM unnest(
          ${sql.param(chunk.map((r) => r.symbol))}::text[], ${sql.param(chunk.map((r) => r.tf))}::text[],
          ${sql.param(chunk.map((r) => r.openTime))}::bigint[],
          ${sql.param(chunk.map((r) => r.open))}::float8[], ${sql.param(chunk.map((r) => r.high))}::float8[],
          ${sql.param(chunk.map((r) => r.low))}::float8[],
          ${sql.param(chunk.map((r) => r.close))}::float8[], ${sql.param(chunk.map((r) => r.volume))}::float8[],
          ${sql.param(chunk.map((r) => flag(r.closed)))}::text[]::bool[],
          ${sql.param(chunk.map((r) => flag(demoCoins.has(r.symbol))))}::text[]::bool[])
        ON CONFLICT (symbol, tf, open_time) DO UPDATE SET
          open = excluded.open, high = excluded.high, low = excluded.low, close = excluded.close,
          volume = excluded.volume, closed = excluded.closed`);
    }
    // One multi-row upsert per table for all touched coins, not two statements per coin: at the
    // top of the hour every coin closes at once, and ~2 round trips per coin inside this
    // transaction delayed the commit (and so every alert) by ~100 ms with 50 coins. Symbol
    // order: concurrent writers lock the rows in the same order.
    const bySymbol = [...touched].sort((a, b) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0));
    // The same upsert raises each coin's market version and returns it (no extra statement).
    const coinRows = bySymbol.map((coin) => ({
      symbol: coin.symbol,
      baseTf: coin.baseTf,
      lastUpdateAt: new Date(coin.lastUpdateAt),
      demo: coin.demo,
      version: 1,
    }));
    const versions = new Map<string, number>();
    for (let i = 0; i < coinRows.length; i += UPSERT_CHUNK) {
      const raised = await tx
        .insert(coins)
        .values(coinRows.slice(i, i + UPSERT_CHUNK))
        .onConflictDoUpdate({
          target: coins.symbol,
          // demo and base_tf change only when a real push replaces demo history (demo over real is refused).
          set: {
            lastUpdateAt: sql`excluded.last_update_at`,
            demo: sql`excluded.demo`,
            baseTf: sql`excluded.base_tf`,
            version: sql`${coins.version} + 1`,
          },
        })
        .returning({ symbol: coins.symbol, version: coins.version });
      for (const row of raised) versions.set(row.symbol, Number(row.version));
    }
    for (let i = 0; i < states.length; i += UPSERT_CHUNK) {
      await tx
        .insert(seriesState)
        .values(states.slice(i, i + UPSERT_CHUNK))
        .onConflictDoUpdate({
          target: [seriesState.symbol, seriesState.tf],
          set: {
            state: sql`excluded.state`,
            lastClosedOpenTime: sql`excluded.last_closed_open_time`,
            updatedAt: sql`excluded.updated_at`,
          },
        });
    }
    if (events.length > 0) {
      const stored = resultRows<{ seq: number | string; id: string; symbol: string; tf: string; live: boolean }>(
        await tx.execute(sql`
        WITH lock AS (SELECT pg_advisory_xact_lock(${SIGNAL_EVENTS_LOCK})),
        stored AS (
          INSERT INTO signal_events (id, symbol, tf, signal, price, defense, atr_pct, candle_open_time, live, demo)
          SELECT e.* FROM lock, unnest(
            ${sql.param(events.map((e) => e.id))}::text[], ${sql.param(events.map((e) => e.symbol))}::text[],
            ${sql.param(events.map((e) => e.tf))}::text[],
            ${sql.param(events.map((e) => e.signal))}::text[], ${sql.param(events.map((e) => e.price))}::float8[],
            ${sql.param(events.map((e) => e.defense))}::float8[],
            ${sql.param(events.map((e) => e.atrPct))}::float8[],
            ${sql.param(events.map((e) => e.candleOpenTime))}::bigint[],
            ${sql.param(events.map((e) => flag(e.live)))}::text[]::bool[],
            ${sql.param(events.map((e) => flag(demoCoins.has(e.symbol))))}::text[]::bool[]) AS e
          ORDER BY 8, 3, 2
          -- The same candle always makes the same event: a replay stores and alerts nothing new.
          ON CONFLICT (id) DO NOTHING
          RETURNING seq, id, symbol, tf, live)
        SELECT seq, id, symbol, tf, live FROM stored ORDER BY
        seq`),
      ).map((r) => ({ ...r, seq: Number(r.seq), live: r.live === true }));
      if (stored.some((e) => e.live)) {
        // Still under the lock taken above: no other writer can chain between our read of the head and our commit.
        await chainLiveEvents(tx);
      }
      if (stored.length > 0) {
        await tx.execute(sql`SELECT pg_notify(${SIGNAL_EVENTS}, '')`);
        await write.onEventsStored?.(tx, stored, now);
      }
    }
    // NOTIFY payloads are limited to 8000 bytes: many coins at once means "reload everything".
    const symbols = touched.map((c) => c.symbol);
    const payload = JSON.stringify({ writer, symbols: symbols.join(",").length > 7000 ? ["*"] : symbols });
    await tx.execute(sql`SELECT pg_notify(${MARKET_UPDATED}, ${payload})`);
    return versions;
  });
  for (const { series, count } of checkpointed) series.storedCount = Math.max(series.storedCount ?? count, count);
  return versions;
}

/**
 * Chains every live event not chained yet, in seq order, after the current head; returns their
 * hashes by seq. The caller holds SIGNAL_EVENTS_LOCK to commit, so the head it reads is the
 * head when it commits (and the unique chain_prev index refuses a fork should that ever fail).
 * Live events stored before the chain existed are chained by the first writer after it. Demo
 * events are never chained: they are no market's record, and real data deletes them.
 */
async function chainLiveEvents(tx: Transaction): Promise<Map<number, string>> {
  const pending = resultRows<{
    seq: number | string;
    symbol: string;
    tf: string;
    signal: string;
    price: number;
    defense: number | null;
    candle_open_time: number | string;
  }>(
    await tx.execute(sql`
      SELECT seq, symbol, tf, signal, price, defense, candle_open_time FROM signal_events
       WHERE live AND NOT demo AND chain_hash IS NULL ORDER BY seq`),
  );
  const hashes = new Map<number, string>();
  if (pending.length === 0) return hashes;
  const [head] = resultRows<{ chain_hash: string }>(
    await tx.execute(sql`SELECT chain_hash FROM signal_events WHERE chain_hash IS NOT NULL ORDER BY seq DESC LIMIT 1`),
  );
  let prev = head?.chain_hash ?? GENESIS_HASH;
  const prevs: string[] = [];
  for (const e of pending) {
    const hash = chainHash(prev, {
      symbol: e.symbol,
      tf: e.tf,
      signal: e.signal,
      confirmedAt: confirmedAtOf(e.tf, Number(e.candle_open_time)),
      price: e.price,
      defense: e.defense,
    });
    prevs.push(prev);
    hashes.set(Number(e.seq), hash);
    prev = hash;
  }
  await tx.execute(sql`
    UPDATE signal_events e SET chain_prev = u.prev, chain_hash = u.hash
      FROM unnest(${sql.param(pending.map((e) => Number(e.seq)))}::bigint[], ${sql.param(prevs)}::text[],
      ${sql.param([...hashes.values()])}::text[]) AS u(seq, prev, hash)
     WHERE e.seq = u.seq`);
  return hashes;
}

/**
 * Deletes the demo history of these coins: the candles, checkpoints and signal events derived
 * from synthetic prices, the unsent alerts of those events, the coins' sample derivatives and
 * fundamentals (the coin's row is made real by the upsert that follows in the same
 * transaction). Rows that are real are never touched (every statement filters on `demo`).
 */
export async function deleteDemoHistory(tx: Transaction, symbols: readonly string[]): Promise<void> {
  const list = sql`${sql.param([...symbols])}::text[]`;
  const demoCoins = sql`(SELECT symbol FROM coins WHERE demo AND symbol = ANY (${list}))`;
  await tx.execute(sql`
    UPDATE outbox SET failed_at = now(), lease_until = NULL, last_error = 'demo data replaced by real data'
     WHERE sent_at IS NULL AND failed_at IS NULL
       AND event_id IN (SELECT id FROM signal_events WHERE demo AND symbol = ANY (${list}))`);
  await tx.execute(sql`DELETE FROM signal_events WHERE demo AND symbol = ANY (${list})`);
  await tx.execute(sql`DELETE FROM candles WHERE demo AND symbol = ANY (${list})`);
  await tx.execute(sql`DELETE FROM series_state WHERE symbol IN ${demoCoins}`);
  await tx.execute(sql`DELETE FROM derivatives_readings WHERE demo AND symbol = ANY (${list})`);
  await tx.execute(sql`DELETE FROM coin_fundamentals WHERE demo AND symbol = ANY (${list})`);
  // The coin's row stays: the upsert that follows in this transaction makes it real and raises
  // its market version, so every process that held the demo readings sees it is behind. (A
  // deleted and re-inserted row would start again at version 1, below the demo's.)
}

const toCandle = (r: {
  openTime: number;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
}): Candle => ({
  openTime: Number(r.openTime),
  open: r.open,
  high: r.high,
  low: r.low,
  close: r.close,
  volume: r.volume,
});

/** Where the reads of a coin run: the pool, or one read-only snapshot (loadCoin). */
type Reader = Database | Transaction;

async function closedCandles(
  db: Reader,
  symbol: string,
  tf: Timeframe,
  from: number | null,
  limit?: number,
): Promise<Candle[]> {
  const where = and(
    eq(candles.symbol, symbol),
    eq(candles.tf, tf),
    eq(candles.closed, true),
    from === null ? undefined : gte(candles.openTime, from),
  );
  if (limit !== undefined) {
    const rows = await db.select().from(candles).where(where).orderBy(desc(candles.openTime)).limit(limit);
    return rows.reverse().map(toCandle);
  }
  return (await db.select().from(candles).where(where).orderBy(asc(candles.openTime))).map(toCandle);
}

async function restoreSeries(db: Reader, symbol: string, tf: Timeframe, checkpoint: unknown): Promise<SeriesRuntime> {
  const series = emptySeries(tf);
  try {
    if (checkpoint !== undefined) {
      series.state = restoreState(checkpoint);
      series.storedCount = series.state.count;
      return series;
    }
  } catch {
    // An unreadable or older checkpoint falls through to a bounded rebuild from the candles.
  }
  series.state = runSeries(await closedCandles(db, symbol, tf, null, WARMUP_CANDLES));
  // The store holds no usable checkpoint of it: the next commit of the coin writes one.
  series.storedCount = checkpoint === undefined && series.state.count === 0 ? 0 : null;
  return series;
}

/** A coin as the store holds it, with the market version it is at least as new as. */
export interface StoredCoin {
  readonly runtime: CoinRuntime;
  /** Read before the state, so the state is this version or a later one, never an earlier one. */
  readonly version: number;
}

/** What a reload kept of one coin: its checkpoints (by row version) and the derived series' partials they imply. */
interface KnownCoin {
  readonly baseTf: Timeframe;
  /** Per timeframe: the checkpoint row's version (`xmin`) and its parsed state. */
  readonly checkpoints: ReadonlyMap<string, { readonly xmin: string; readonly state: unknown }>;
  /** Per derived timeframe: the closed base candles of its open bucket, folded (null: none). */
  readonly partials: ReadonlyMap<Timeframe, Candle | null>;
}

/**
 * The checkpoints a process last read, so the next reload of a coin reads only what changed.
 * Only a close rewrites a checkpoint (a forming update writes candle rows alone), so a coin
 * whose checkpoint rows are all the same row versions (`xmin`) as last time has the same
 * engine states and the same partial derived candles: its reload reads only the base candles
 * after its last close (the forming one), not its checkpoints and the day of candles before.
 * Every coin is still read in one snapshot, and anything not known exactly is read in full.
 */
export class CheckpointCache {
  private readonly coins = new Map<string, KnownCoin>();

  get(symbol: string): KnownCoin | undefined {
    return this.coins.get(symbol);
  }

  set(symbol: string, known: KnownCoin): void {
    this.coins.set(symbol, known);
  }
}

/**
 * Rebuilds coins' runtimes from their checkpoints and candles, exactly as they were persisted,
 * with their market versions: all read in one snapshot, so each state is exactly that version's.
 * A set of coins costs a fixed number of statements (three, plus a rebuild per unreadable
 * checkpoint), not a few per coin: a follower reloads every coin a boundary closed at once.
 * With a cache, unchanged checkpoints are not read again (CheckpointCache).
 */
export async function loadCoins(
  handle: DbHandle,
  symbols: readonly string[],
  cache?: CheckpointCache,
): Promise<StoredCoin[]> {
  if (symbols.length === 0) return [];
  return handle.db.transaction((tx) => loadCoinsIn(tx, [...symbols], cache), {
    isolationLevel: "repeatable read",
    accessMode: "read only",
  });
}

async function loadCoinsIn(db: Transaction, symbols: string[], cache?: CheckpointCache): Promise<StoredCoin[]> {
  const coinRows = (await db.select().from(coins).where(inArray(coins.symbol, symbols))).filter((c) =>
    isTimeframe(c.baseTf),
  );
  if (coinRows.length === 0) return [];
  // Taken once: a concurrent reload may replace the cache's entries while this one reads.
  const cached = new Map(coinRows.map((c) => [c.symbol, cache?.get(c.symbol)]));
  const known = coinRows.flatMap((c) =>
    [...(cached.get(c.symbol)?.checkpoints ?? [])].map(([tf, k]) => ({ symbol: c.symbol, tf, xmin: k.xmin })),
  );
  // The state of a checkpoint this process already holds at the same row version is not sent again.
  const rows = resultRows<{ symbol: string; tf: string; xmin: string; state: string | null }>(
    await db.execute(sql`
      SELECT s.symbol, s.tf, s.xmin::text AS xmin,
             CASE WHEN k.xmin = s.xmin::text THEN NULL ELSE s.state::text END AS state
        FROM series_state s
        LEFT JOIN unnest(${sql.param(known.map((k) => k.symbol))}::text[],
             ${sql.param(known.map((k) => k.tf))}::text[], ${sql.param(known.map((k) => k.xmin))}::text[])
             AS k(symbol, tf, xmin)
          ON k.symbol = s.symbol AND k.tf = s.tf
       WHERE s.symbol = ANY (${sql.param(coinRows.map((c) => c.symbol))}::text[])`),
  );
  const checkpoints = new Map<string, Map<string, { xmin: string; state: unknown }>>();
  for (const r of rows) {
    const perCoin = checkpoints.get(r.symbol) ?? new Map<string, { xmin: string; state: unknown }>();
    checkpoints.set(r.symbol, perCoin);
    const state =
      r.state === null ? cached.get(r.symbol)?.checkpoints.get(r.tf)?.state : (JSON.parse(r.state) as unknown);
    perCoin.set(r.tf, { xmin: r.xmin, state });
  }
  const restored = new Map<string, Map<Timeframe, SeriesRuntime>>();
  /** Coins whose every checkpoint is the row version last read: their partials are the cached ones. */
  const unchanged = new Set<string>();
  for (const coin of coinRows) {
    const baseTf = coin.baseTf as Timeframe;
    const series = new Map<Timeframe, SeriesRuntime>();
    const stored = checkpoints.get(coin.symbol);
    const before = cached.get(coin.symbol);
    const timeframes = [baseTf, ...derivedTimeframes(baseTf)];
    if (
      before?.baseTf === baseTf &&
      timeframes.every((tf) => {
        const now = stored?.get(tf);
        return now !== undefined && now.xmin === before.checkpoints.get(tf)?.xmin;
      })
    )
      unchanged.add(coin.symbol);
    for (const tf of timeframes) series.set(tf, await restoreSeries(db, coin.symbol, tf, stored?.get(tf)?.state));
    restored.set(coin.symbol, series);
  }
  const recent = await recentBaseCandles(
    db,
    coinRows.map((c) => {
      const lastClosed = restored.get(c.symbol)!.get(c.baseTf as Timeframe)!.state.lastOpenTime;
      return {
        symbol: c.symbol,
        baseTf: c.baseTf as Timeframe,
        lastClosed,
        // Known partials: only the candles after the last close (the forming one) are needed.
        ...(unchanged.has(c.symbol) ? { since: lastClosed === null ? 0 : lastClosed + 1 } : {}),
      };
    }),
  );
  return coinRows.map((coin) => {
    const baseTf = coin.baseTf as Timeframe;
    const series = restored.get(coin.symbol)!;
    attachOpenCandles(
      series,
      baseTf,
      recent.get(coin.symbol) ?? [],
      unchanged.has(coin.symbol) ? cached.get(coin.symbol)?.partials : undefined,
    );
    const stored = checkpoints.get(coin.symbol);
    if (cache && stored)
      cache.set(coin.symbol, {
        baseTf,
        checkpoints: stored,
        partials: new Map(derivedTimeframes(baseTf).map((tf) => [tf, series.get(tf)!.partial])),
      });
    return {
      runtime: new CoinRuntime(coin.symbol, baseTf, coin.lastUpdateAt.getTime(), series, coin.demo),
      version: Number(coin.version),
    };
  });
}

/**
 * Per coin, its base candles (closed and forming, in time order) from the start of the longest
 * derived bucket holding its last close: what the open derived candles and the forming one are
 * built from. One statement for every coin (an index range per coin).
 */
async function recentBaseCandles(
  db: Transaction,
  wanted: { symbol: string; baseTf: Timeframe; lastClosed: number | null; since?: number }[],
): Promise<Map<string, (Candle & { closed: boolean })[]>> {
  const since = wanted.map(
    (w) =>
      w.since ??
      (w.lastClosed === null
        ? 0
        : Math.min(...derivedTimeframes(w.baseTf).map((tf) => bucketStart(w.lastClosed!, tf)), w.lastClosed)),
  );
  const rows = resultRows<{
    symbol: string;
    open_time: string | number;
    open: number;
    high: number;
    low: number;
    close: number;
    volume: number;
    closed: boolean;
  }>(
    await db.execute(sql`
      SELECT c.symbol, c.open_time, c.open, c.high, c.low, c.close, c.volume, c.closed
        FROM unnest(${sql.param(wanted.map((w) => w.symbol))}::text[],
        ${sql.param(wanted.map((w) => w.baseTf))}::text[], ${sql.param(since)}::bigint[]) AS w(symbol, tf, since)
        JOIN candles c ON c.symbol = w.symbol AND c.tf = w.tf AND c.open_time >= w.since
       ORDER BY c.symbol, c.open_time`),
  );
  const out = new Map<string, (Candle & { closed: boolean })[]>();
  for (const r of rows) {
    const list = out.get(r.symbol) ?? [];
    out.set(r.symbol, list);
    list.push({
      ...toCandle({
        openTime: Number(r.open_time),
        open: Number(r.open),
        high: Number(r.high),
        low: Number(r.low),
        close: Number(r.close),
        volume: Number(r.volume),
      }),
      closed: r.closed === true,
    });
  }
  return out;
}

/** Sets the forming base candle and every derived series' open candle from the coin's recent base candles. */
function attachOpenCandles(
  series: Map<Timeframe, SeriesRuntime>,
  baseTf: Timeframe,
  recent: readonly (Candle & { closed: boolean })[],
  partials?: ReadonlyMap<Timeframe, Candle | null>,
): void {
  const base = series.get(baseTf)!;
  const lastClosed = base.state.lastOpenTime;
  const forming = recent.findLast((c) => !c.closed && (lastClosed === null || c.openTime > lastClosed));
  base.forming = forming ? toCandle(forming) : null;
  for (const tf of derivedTimeframes(baseTf)) {
    const s = series.get(tf)!;
    if (partials) {
      s.partial = partials.get(tf) ?? null;
    } else if (lastClosed !== null) {
      const bucket = bucketStart(lastClosed, tf);
      const derivedLast = s.state.lastOpenTime;
      if (derivedLast === null || derivedLast < bucket) {
        for (const c of recent)
          if (c.closed && c.openTime >= bucket) s.partial = mergeCandle(s.partial, toCandle(c), bucket);
      }
    }
    if (base.forming) {
      const bucket = bucketStart(base.forming.openTime, tf);
      s.forming = mergeCandle(s.partial && s.partial.openTime === bucket ? s.partial : null, base.forming, bucket);
    } else {
      s.forming = s.partial;
    }
  }
}

/** What a stored checkpoint says of its series, enough to tell whether a state stepped elsewhere is the same. */
export interface CheckpointStamp {
  readonly count: number;
  readonly lastOpenTime: number | null;
  readonly atr: number | null;
  readonly signalAt: number | null;
}

/** A coin as one snapshot of the store holds it, after a close this process already holds. */
export interface CommittedChange {
  readonly symbol: string;
  readonly version: number;
  readonly baseTf: string;
  readonly demo: boolean;
  readonly lastUpdateAt: number;
  /** Its base candles after that close, closed and forming, in time order. */
  readonly candles: readonly (Candle & { closed: boolean })[];
  /** Per timeframe, its stored checkpoint's stamp (absent: no checkpoint stored). */
  readonly stamps: ReadonlyMap<string, CheckpointStamp>;
}

/**
 * Reads, in one snapshot, what other processes committed to coins since a close this process
 * holds (`after`: the open time of its last closed base candle): each coin's version, its base
 * candles after that close, and its checkpoints' stamps (not their states). A fixed few
 * statements for any number of coins; a coin not stored with that base timeframe is absent.
 */
export async function readCommitted(
  handle: DbHandle,
  wanted: readonly { symbol: string; baseTf: Timeframe; after: number | null }[],
): Promise<CommittedChange[]> {
  if (wanted.length === 0) return [];
  return handle.db.transaction((tx) => readCommittedIn(tx, wanted), {
    isolationLevel: "repeatable read",
    accessMode: "read only",
  });
}

async function readCommittedIn(
  tx: Transaction,
  wanted: readonly { symbol: string; baseTf: Timeframe; after: number | null }[],
): Promise<CommittedChange[]> {
  const symbols = wanted.map((w) => w.symbol);
  const coinRows = await tx.select().from(coins).where(inArray(coins.symbol, symbols));
  const stampRows = resultRows<{
    symbol: string;
    tf: string;
    count: string | number;
    last_open_time: string | null;
    atr: string | null;
    signal_at: string | null;
  }>(
    await tx.execute(sql`
      SELECT symbol, tf, state->>'count' AS count, state->>'lastOpenTime' AS last_open_time,
             state->>'atr' AS atr, state->>'signalAt' AS signal_at
        FROM series_state WHERE symbol = ANY (${sql.param(symbols)}::text[])`),
  );
  const recent = await recentBaseCandles(
    tx,
    wanted.map((w) => ({ ...w, lastClosed: w.after, since: w.after === null ? 0 : w.after + 1 })),
  );
  const stamps = new Map<string, Map<string, CheckpointStamp>>();
  const orNull = (text: string | null) => (text === null ? null : Number(text));
  for (const r of stampRows) {
    const perCoin = stamps.get(r.symbol) ?? new Map<string, CheckpointStamp>();
    stamps.set(r.symbol, perCoin);
    perCoin.set(r.tf, {
      count: Number(r.count),
      lastOpenTime: orNull(r.last_open_time),
      atr: orNull(r.atr),
      signalAt: orNull(r.signal_at),
    });
  }
  return coinRows.map((c) => ({
    symbol: c.symbol,
    version: Number(c.version),
    baseTf: c.baseTf,
    demo: c.demo,
    lastUpdateAt: c.lastUpdateAt.getTime(),
    candles: recent.get(c.symbol) ?? [],
    stamps: stamps.get(c.symbol) ?? new Map(),
  }));
}

/** Loads every coin (at start). */
export async function loadAllCoins(handle: DbHandle, cache?: CheckpointCache): Promise<StoredCoin[]> {
  const symbols = await handle.db.select({ symbol: coins.symbol }).from(coins);
  return loadCoins(
    handle,
    symbols.map((r) => r.symbol),
    cache,
  );
}

/** Closed candles of one series in time order (chart pages, tests). */
export async function readCandles(handle: DbHandle, symbol: string, tf: Timeframe): Promise<Candle[]> {
  return closedCandles(handle.db, symbol, tf, null);
}

/** Number of stored candles per timeframe for some coins (import summaries, tests). */
export async function countCandles(handle: DbHandle, symbols: string[]): Promise<Record<string, number>> {
  if (symbols.length === 0) return {};
  const rows = await handle.db
    .select({ tf: candles.tf, n: sql<number>`count(*)::int` })
    .from(candles)
    .where(inArray(candles.symbol, symbols))
    .groupBy(candles.tf);
  return Object.fromEntries(rows.map((r) => [r.tf, Number(r.n)]));
}
