/**
 * What a chart page shows, read from the store: closed candles, the stored signal events, the
 * confirmed levels at the last close (from the engine checkpoint, so any server process can
 * draw them, whether or not it runs the feed) and the track record computed from all of it.
 */
import { and, asc, desc, eq, gte, sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { candles, coins, seriesState, signalEvents } from "../db/schema.ts";
import { readClosed, restoreState, type Candle } from "../engine/index.ts";
import { derivedTimeframes, isTimeframe } from "../market/timeframes.ts";
import type { Timeframe } from "../market/timeframes.ts";
import type { SignalName } from "../market/snapshot.ts";
import { computeTrackRecord, type TrackEvent, type TrackRecord } from "./track-record.ts";

/** Candles drawn on the chart (the newest ones); the track record uses the whole history. */
export const CHART_CANDLES = 1500;
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
  /** Closed candles in the whole history (the chart shows at most CHART_CANDLES). */
  readonly totalCandles: number;
}

/** Coins the feed has seen, with their timeframes, sorted by symbol. */
export async function listChartCoins(handle: DbHandle): Promise<Array<{ symbol: string; timeframes: Timeframe[] }>> {
  const rows = await handle.db.select({ symbol: coins.symbol, baseTf: coins.baseTf }).from(coins).orderBy(asc(coins.symbol));
  return rows.filter((r) => isTimeframe(r.baseTf)).map((r) => ({ symbol: r.symbol, timeframes: [r.baseTf as Timeframe, ...derivedTimeframes(r.baseTf as Timeframe)] }));
}

async function currentLevels(handle: DbHandle, symbol: string, tf: Timeframe): Promise<CurrentLevels | null> {
  const [row] = await handle.db.select({ state: seriesState.state }).from(seriesState).where(and(eq(seriesState.symbol, symbol), eq(seriesState.tf, tf)));
  if (!row) return null;
  try {
    const state = restoreState(row.state);
    const reading = readClosed(state);
    if (reading === null || state.lastOpenTime === null) return null;
    return { asOf: state.lastOpenTime, signal: reading.signal, close: reading.price, defense: reading.defense, arming: reading.arming };
  } catch {
    // A checkpoint of an older engine version is rebuilt by the feed; until then, no levels.
    return null;
  }
}

/** Everything the chart page of one coin and timeframe needs; null when the coin is unknown. */
export async function loadChartData(handle: DbHandle, symbol: string, tf: Timeframe): Promise<ChartData | null> {
  const coin = (await listChartCoins(handle)).find((c) => c.symbol === symbol);
  if (!coin) return null;
  const eventRows = await handle.db
    .select({ id: signalEvents.id, signal: signalEvents.signal, price: signalEvents.price, defense: signalEvents.defense, candleOpenTime: signalEvents.candleOpenTime })
    .from(signalEvents)
    .where(and(eq(signalEvents.symbol, symbol), eq(signalEvents.tf, tf)))
    .orderBy(asc(signalEvents.candleOpenTime), asc(signalEvents.seq));
  const events: StoredEvent[] = eventRows.map((e) => ({ id: e.id, signal: e.signal as SignalName, price: e.price, defense: e.defense, candleOpenTime: Number(e.candleOpenTime) }));
  const closedSeries = and(eq(candles.symbol, symbol), eq(candles.tf, tf), eq(candles.closed, true));
  // The record needs closes from the first event on; earlier candles cannot end any trade.
  const firstEvent = events[0]?.candleOpenTime;
  const closes = firstEvent === undefined
    ? []
    : await handle.db
        .select({ openTime: candles.openTime, close: candles.close })
        .from(candles)
        .where(and(closedSeries, gte(candles.openTime, firstEvent)))
        .orderBy(asc(candles.openTime));
  const recent = await handle.db.select().from(candles).where(closedSeries).orderBy(desc(candles.openTime)).limit(CHART_CANDLES);
  const [counted] = await handle.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM candles WHERE symbol = ${symbol} AND tf = ${tf} AND closed`);
  return {
    symbol,
    tf,
    timeframes: coin.timeframes,
    candles: recent.reverse().map((c) => ({ openTime: Number(c.openTime), open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume })),
    events,
    levels: await currentLevels(handle, symbol, tf),
    record: computeTrackRecord(events, closes.map((c) => ({ openTime: Number(c.openTime), close: c.close }))),
    totalCandles: Number(counted?.n ?? 0),
  };
}
