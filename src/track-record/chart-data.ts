/**
 * What a chart page shows, read from the store: closed candles, the stored signal events, the
 * confirmed levels at the last close (from the engine checkpoint, so any server process can
 * draw them, whether or not it runs the feed) and the track record and backtest computed from
 * all of it. ChartDataCache keeps one computed copy per coin and timeframe until that series'
 * next candle close or signal event (docs/track-record.md, "Caching").
 */
import { and, asc, desc, eq, gte, sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { candles, coins, seriesState, signalEvents } from "../db/schema.ts";
import { type Candle, readClosed, restoreState } from "../engine/index.ts";
import type { SignalName } from "../market/snapshot.ts";
import type { Timeframe } from "../market/timeframes.ts";
import { derivedTimeframes, isTimeframe } from "../market/timeframes.ts";
import { ALLOWED_FEES_PCT, type BacktestResult, type CloseSeries, DEFAULT_FEE_PCT, runBacktest } from "./backtest.ts";
import { computeTrackRecord, type TrackEvent, type TrackRecord } from "./track-record.ts";

/** Candles drawn on the chart (the newest ones); the track record uses the whole history. */
export const CHART_CANDLES = 1500;
/** Backtests at fees other than the default kept per series (the latest ones asked for). */
const FEES_KEPT = ALLOWED_FEES_PCT.length;
/**
 * Series whose computed copy is kept (the least recently viewed is dropped first): each holds its
 * whole history's closes (about 0.5 MB for 32,000 hourly closes) and its drawn candles, so an
 * unbounded cache grew with every coin and timeframe anyone viewed (docs/track-record.md).
 */
export const CHART_SERIES_KEPT = 32;
/** Events listed in the page's signal history table (newest first). */
export const HISTORY_ROWS = 30;

export interface StoredEvent extends TrackEvent {
  readonly id: string;
}

export interface CurrentLevels {
  /** Open time of the last closed candle the levels belong to. */
  readonly asOf: number;
  readonly signal: SignalName;
  readonly close: number;
  readonly defense: number | null;
  readonly arming: { dir: 1 | -1; score: number; trigger: number; invalidation: number } | null;
}

export interface ChartData {
  readonly symbol: string;
  readonly tf: Timeframe;
  /** Timeframes this coin has (its base and the ones built from it). */
  readonly timeframes: readonly Timeframe[];
  readonly candles: readonly Candle[];
  readonly events: readonly StoredEvent[];
  readonly levels: CurrentLevels | null;
  readonly record: TrackRecord;
  /** Closes from the first event on (what the record and the backtest are computed over). */
  readonly closes: CloseSeries;
  /** The backtest at DEFAULT_FEE_PCT (other fees: runBacktest over `record.trades` and `closes`). */
  readonly backtest: BacktestResult;
  /** Closed candles in the whole history (the chart shows at most CHART_CANDLES). */
  readonly totalCandles: number;
  /** Every figure here comes from the demo feed's synthetic prices (and must say so where shown). */
  readonly demo: boolean;
}

/** Coins the feed has seen, with their timeframes and provenance, sorted by symbol. */
export async function listChartCoins(
  handle: DbHandle,
): Promise<Array<{ symbol: string; timeframes: Timeframe[]; demo: boolean }>> {
  const rows = await handle.db
    .select({ symbol: coins.symbol, baseTf: coins.baseTf, demo: coins.demo })
    .from(coins)
    .orderBy(asc(coins.symbol));
  return rows
    .filter((r) => isTimeframe(r.baseTf))
    .map((r) => ({
      symbol: r.symbol,
      timeframes: [r.baseTf as Timeframe, ...derivedTimeframes(r.baseTf as Timeframe)],
      demo: r.demo,
    }));
}

async function currentLevels(handle: DbHandle, symbol: string, tf: Timeframe): Promise<CurrentLevels | null> {
  const [row] = await handle.db
    .select({ state: seriesState.state })
    .from(seriesState)
    .where(and(eq(seriesState.symbol, symbol), eq(seriesState.tf, tf)));
  if (!row) return null;
  try {
    const state = restoreState(row.state);
    const reading = readClosed(state);
    if (reading === null || state.lastOpenTime === null) return null;
    return {
      asOf: state.lastOpenTime,
      signal: reading.signal,
      close: reading.price,
      defense: reading.defense,
      arming: reading.arming,
    };
  } catch {
    // A checkpoint of an older engine version is rebuilt by the feed; until then, no levels.
    return null;
  }
}

/** Everything the chart page of one coin and timeframe needs, read and computed now; null when the coin is unknown. */
export async function loadChartData(handle: DbHandle, symbol: string, tf: Timeframe): Promise<ChartData | null> {
  const coin = (await listChartCoins(handle)).find((c) => c.symbol === symbol);
  return coin ? computeChartData(handle, symbol, tf, coin.timeframes, coin.demo) : null;
}

async function computeChartData(
  handle: DbHandle,
  symbol: string,
  tf: Timeframe,
  timeframes: readonly Timeframe[],
  demo: boolean,
): Promise<ChartData> {
  const eventRows = await handle.db
    .select({
      id: signalEvents.id,
      signal: signalEvents.signal,
      price: signalEvents.price,
      defense: signalEvents.defense,
      candleOpenTime: signalEvents.candleOpenTime,
    })
    .from(signalEvents)
    .where(and(eq(signalEvents.symbol, symbol), eq(signalEvents.tf, tf)))
    .orderBy(asc(signalEvents.candleOpenTime), asc(signalEvents.seq));
  const events: StoredEvent[] = eventRows.map((e) => ({
    id: e.id,
    signal: e.signal as SignalName,
    price: e.price,
    defense: e.defense,
    candleOpenTime: Number(e.candleOpenTime),
  }));
  const closedSeries = and(eq(candles.symbol, symbol), eq(candles.tf, tf), eq(candles.closed, true));
  // The record needs closes from the first event on; earlier candles cannot end any trade.
  const firstEvent = events[0]?.candleOpenTime;
  const closes =
    firstEvent === undefined
      ? []
      : await handle.db
          .select({ openTime: candles.openTime, close: candles.close })
          .from(candles)
          .where(and(closedSeries, gte(candles.openTime, firstEvent)))
          .orderBy(asc(candles.openTime));
  const recent = await handle.db
    .select()
    .from(candles)
    .where(closedSeries)
    .orderBy(desc(candles.openTime))
    .limit(CHART_CANDLES);
  const [counted] = await handle.rows<{ n: number }>(
    sql`SELECT count(*)::int AS n FROM candles WHERE symbol = ${symbol} AND tf = ${tf} AND closed`,
  );
  const closeSeries: CloseSeries = {
    times: Float64Array.from(closes, (c) => Number(c.openTime)),
    closes: Float64Array.from(closes, (c) => c.close),
  };
  const record = computeTrackRecord(
    events,
    closes.map((c) => ({ openTime: Number(c.openTime), close: c.close })),
  );
  return {
    symbol,
    tf,
    timeframes,
    candles: recent.reverse().map((c) => ({
      openTime: Number(c.openTime),
      open: c.open,
      high: c.high,
      low: c.low,
      close: c.close,
      volume: c.volume,
    })),
    events,
    levels: await currentLevels(handle, symbol, tf),
    record,
    closes: closeSeries,
    backtest: runBacktest(record.trades, closeSeries, DEFAULT_FEE_PCT),
    totalCandles: Number(counted?.n ?? 0),
    demo,
  };
}

/**
 * What identifies the stored state of a series: its last closed candle (the feed writes it in
 * the same transaction as the candle rows) and its newest signal event. Equal stamps mean equal
 * chart data, so a view only has to read the stamp.
 */
async function seriesStamps(handle: DbHandle, symbol: string | null): Promise<Map<string, string>> {
  const rows = await handle.rows<{
    symbol: string;
    tf: string;
    last_close: number | null;
    last_seq: number | null;
  }>(sql`
    SELECT s.symbol, s.tf, s.last_closed_open_time::float8 AS last_close,
      (SELECT max(e.seq) FROM signal_events e WHERE e.symbol = s.symbol AND e.tf = s.tf)::float8 AS last_seq
    FROM series_state s WHERE ${symbol === null ? sql`true` : sql`s.symbol = ${symbol}`}`);
  return new Map(rows.map((r) => [`${r.symbol}/${r.tf}`, `${r.last_close ?? "-"}/${r.last_seq ?? "-"}`]));
}

/**
 * Chart data per coin and timeframe, computed once per candle close or signal event of that
 * series and served from memory otherwise. Each view reads only the series' stamp (one small
 * query); a changed stamp recomputes that series alone. Any process serves its own copy, and
 * the stamp is read from the store, so a close written by another process is seen at the next
 * view with no notification to lose.
 */
export class ChartDataCache {
  /** In order of last use, least recent first (a Map keeps insertion order: a hit re-inserts). */
  private readonly entries = new Map<string, { stamp: string; data: Promise<ChartData> }>();
  private readonly seriesKept: number;
  /** Backtests at other fees, per computed copy (dropped with it), at most FEES_KEPT each. */
  private readonly otherFees = new WeakMap<ChartData, Map<number, BacktestResult>>();
  private readonly db: DbHandle;
  private readonly onComputed: (symbol: string, tf: Timeframe) => void;

  /** `onComputed` is told of every computation (a metric counts them); at most `seriesKept` copies stay. */
  constructor(
    db: DbHandle,
    onComputed: (symbol: string, tf: Timeframe) => void = () => {},
    seriesKept = CHART_SERIES_KEPT,
  ) {
    this.db = db;
    this.onComputed = onComputed;
    this.seriesKept = seriesKept;
  }

  /** How many series' copies are kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** The chart data of one series; null when the coin is unknown. */
  async get(symbol: string, tf: Timeframe): Promise<ChartData | null> {
    const coin = (await listChartCoins(this.db)).find((c) => c.symbol === symbol);
    if (!coin) return null;
    const stamps = await seriesStamps(this.db, symbol);
    return this.fresh(symbol, tf, coin.timeframes, coin.demo, stamps.get(`${symbol}/${tf}`) ?? "none");
  }

  /** The backtest of `data` at a fee per side: the default's is part of the data; others are computed once per copy. */
  backtestAt(data: ChartData, feePct: number): BacktestResult {
    if (feePct === DEFAULT_FEE_PCT) return data.backtest;
    // Only the allowed fees are computed, so every one of them stays cached (FEES_KEPT).
    if (!ALLOWED_FEES_PCT.includes(feePct)) throw new Error(`fee ${feePct}% is not one of the allowed fees`);
    let byFee = this.otherFees.get(data);
    if (!byFee) this.otherFees.set(data, (byFee = new Map()));
    let result = byFee.get(feePct);
    if (!result) {
      result = runBacktest(data.record.trades, data.closes, feePct);
      // Oldest first out: a member trying fees keeps the last few without growing the cache.
      if (byFee.size >= FEES_KEPT) byFee.delete(byFee.keys().next().value!);
      byFee.set(feePct, result);
    }
    return result;
  }

  private fresh(
    symbol: string,
    tf: Timeframe,
    timeframes: readonly Timeframe[],
    demo: boolean,
    seriesStamp: string,
  ): Promise<ChartData> {
    const key = `${symbol}/${tf}`;
    // Real data replacing a coin's demo history changes its provenance: never serve the demo copy for it.
    const stamp = `${demo ? "demo" : "real"}/${seriesStamp}`;
    const cached = this.entries.get(key);
    this.entries.delete(key);
    if (cached && cached.stamp === stamp) {
      this.entries.set(key, cached);
      return cached.data;
    }
    // Concurrent views of a changed series share one computation.
    const data = computeChartData(this.db, symbol, tf, timeframes, demo);
    this.entries.set(key, { stamp, data });
    // A dropped copy still in computation finishes for the views that asked for it.
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.seriesKept) break;
      this.entries.delete(oldest);
    }
    this.onComputed(symbol, tf);
    data.catch(() => {
      if (this.entries.get(key)?.data === data) this.entries.delete(key);
    });
    return data;
  }
}
