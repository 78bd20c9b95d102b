/**
 * The live watchlist's data: a member's coins and timeframes (remembered in `watchlists`),
 * the grid's cells read from the same snapshot a paid call reads (so a cell equals the API's
 * entry at that moment, field for field), the time each cell's signal came into force, and the
 * one stream a web session may hold (`watch_streams`). No Token moves here: the watchlist is
 * a screen for one person, bounded by MAX_WATCH_SYMBOLS × the five timeframes.
 */
import { randomUUID } from "node:crypto";
import { and, desc, eq, gt } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { signalEvents, watchlists, watchStreams, webSessions } from "../db/schema.ts";
import type { ArmingReading, SignalName, SignalSnapshot, UnavailableReason } from "../market/snapshot.ts";
import { isWellFormedSymbol } from "../market/symbols.ts";
import { isTimeframe, TIMEFRAME_MS, TIMEFRAMES, type Timeframe } from "../market/timeframes.ts";

/** Coins on one watchlist at most (the paid call's limit); with five timeframes, 40 cells. */
export const MAX_WATCH_SYMBOLS = 8;
/** What a member who never chose sees. */
export const DEFAULT_WATCHLIST: Watchlist = { symbols: ["BTC", "ETH", "SOL", "BNB", "XRP"], timeframes: ["1h", "4h"] };

export interface Watchlist {
  readonly symbols: readonly string[];
  readonly timeframes: readonly Timeframe[];
}

/** A refused watchlist form: the message says what to change. */
export class WatchlistError extends Error {
  override name = "WatchlistError";
}

/** Reads the form's coins ("btc, eth") and timeframes; throws WatchlistError with the reason. */
export function parseWatchlist(symbolsText: string, timeframes: readonly string[]): Watchlist {
  const symbols: string[] = [];
  for (const raw of symbolsText.split(/[\s,]+/)) {
    const symbol = raw.trim().toUpperCase();
    if (symbol === "" || symbols.includes(symbol)) continue;
    if (!isWellFormedSymbol(symbol))
      throw new WatchlistError(`“${symbol.slice(0, 20)}” is not a coin code (letters and digits, such as BTC)`);
    symbols.push(symbol);
  }
  if (symbols.length === 0) throw new WatchlistError("choose at least one coin");
  if (symbols.length > MAX_WATCH_SYMBOLS)
    throw new WatchlistError(`at most ${MAX_WATCH_SYMBOLS} coins (you gave ${symbols.length})`);
  const tfs = TIMEFRAMES.filter((tf) => timeframes.includes(tf));
  if (tfs.length === 0) throw new WatchlistError("choose at least one timeframe");
  if (timeframes.some((tf) => !isTimeframe(tf)))
    throw new WatchlistError("a timeframe is not one of 15m, 30m, 1h, 4h and 1d");
  return { symbols, timeframes: tfs };
}

/** The member's watchlist, or the default one. */
export async function getWatchlist(handle: DbHandle, accountId: number): Promise<Watchlist> {
  const [row] = await handle.db
    .select({ symbols: watchlists.symbols, timeframes: watchlists.timeframes })
    .from(watchlists)
    .where(eq(watchlists.accountId, accountId));
  if (!row) return DEFAULT_WATCHLIST;
  return { symbols: row.symbols.slice(0, MAX_WATCH_SYMBOLS), timeframes: row.timeframes.filter(isTimeframe) };
}

/** Remembers the member's watchlist (one row per account). */
export async function saveWatchlist(handle: DbHandle, accountId: number, list: Watchlist, now: number): Promise<void> {
  const values = { symbols: [...list.symbols], timeframes: [...list.timeframes], updatedAt: new Date(now) };
  await handle.db
    .insert(watchlists)
    .values({ accountId, ...values })
    .onConflictDoUpdate({ target: watchlists.accountId, set: values });
}

/**
 * One cell of the grid: the paid endpoint's entry for (symbol, tf) in its JSON names, and when its signal came into
 * force.
 */
export type WatchCell =
  | {
      symbol: string;
      tf: Timeframe;
      ok: true;
      price: number;
      signal: SignalName;
      confirmed: boolean;
      defense: number | null;
      arming: ArmingReading | null;
      atr_pct: number;
      /** Close of the candle that set the current signal (epoch ms); null before any signal. */
      changed_at: number | null;
    }
  | { symbol: string; tf: Timeframe; ok: false; reason: UnavailableReason };

/**
 * When each series' current signal came into force, by the id of the event that set it: read
 * once per new event and kept (bounded; an entry is a few numbers).
 */
export class ChangeTimes {
  private readonly byEvent = new Map<string, number | null>();
  private readonly handle: DbHandle;
  constructor(handle: DbHandle) {
    this.handle = handle;
  }

  /** The close time of the series' latest signal event (the one the snapshot's signal stands on). */
  async of(symbol: string, tf: Timeframe, eventId: string | null): Promise<number | null> {
    const key = eventId ?? `latest:${symbol}/${tf}`;
    const known = this.byEvent.get(key);
    if (known !== undefined && eventId !== null) return known;
    const where =
      eventId !== null ? eq(signalEvents.id, eventId) : and(eq(signalEvents.symbol, symbol), eq(signalEvents.tf, tf));
    const [row] = await this.handle.db
      .select({ openTime: signalEvents.candleOpenTime })
      .from(signalEvents)
      .where(where)
      .orderBy(desc(signalEvents.candleOpenTime))
      .limit(1);
    const time = row ? row.openTime + TIMEFRAME_MS[tf] : null;
    if (eventId !== null) {
      if (this.byEvent.size > 10_000) this.byEvent.clear();
      this.byEvent.set(key, time);
    }
    return time;
  }
}

/** The grid's cells now, row by row (coins) and column by column (timeframes). */
export async function watchCells(
  snapshot: SignalSnapshot,
  times: ChangeTimes,
  list: Watchlist,
  now: number,
): Promise<WatchCell[]> {
  const cells: WatchCell[] = [];
  for (const symbol of list.symbols) {
    for (const tf of list.timeframes) {
      const found = isWellFormedSymbol(symbol)
        ? snapshot.lookup(symbol, tf, now)
        : ({ ok: false, reason: "invalid_symbol" } as const);
      if (!found.ok) {
        cells.push({ symbol, tf, ok: false, reason: found.reason });
        continue;
      }
      const r = found.reading;
      cells.push({
        symbol,
        tf,
        ok: true,
        price: r.price,
        signal: r.signal,
        confirmed: r.confirmed,
        defense: r.defense,
        arming: r.arming,
        atr_pct: r.atrPct,
        changed_at: await times.of(symbol, tf, r.signalId),
      });
    }
  }
  return cells;
}

/** Makes this the session's one stream; returns its id (a stream it replaces ends at its next check). */
export async function claimWatchStream(handle: DbHandle, sessionTokenHash: string, now: number): Promise<string> {
  const streamId = randomUUID();
  const values = { streamId, startedAt: new Date(now) };
  await handle.db
    .insert(watchStreams)
    .values({ sessionTokenHash, ...values })
    .onConflictDoUpdate({ target: watchStreams.sessionTokenHash, set: values });
  return streamId;
}

/**
 * The stream is still its session's one stream: not replaced, and the session neither ended (the row goes with it) nor
 * expired.
 */
export async function holdsWatchStream(
  handle: DbHandle,
  sessionTokenHash: string,
  streamId: string,
  now: number,
): Promise<boolean> {
  const [row] = await handle.db
    .select({ streamId: watchStreams.streamId })
    .from(watchStreams)
    .innerJoin(webSessions, eq(webSessions.tokenHash, watchStreams.sessionTokenHash))
    .where(and(eq(watchStreams.sessionTokenHash, sessionTokenHash), gt(webSessions.expiresAt, new Date(now))));
  return row?.streamId === streamId;
}

/** Lets go of the session's stream when it ends (only if still ours). */
export async function releaseWatchStream(handle: DbHandle, sessionTokenHash: string, streamId: string): Promise<void> {
  await handle.db
    .delete(watchStreams)
    .where(and(eq(watchStreams.sessionTokenHash, sessionTokenHash), eq(watchStreams.streamId, streamId)));
}
