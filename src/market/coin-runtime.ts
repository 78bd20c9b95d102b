/**
 * The in-memory market of one coin: an engine state per timeframe, the forming candle of each,
 * and the partial aggregates that build the higher timeframes from the base one. Pure logic
 * (no I/O, no clock): every accepted update returns the candle rows to persist.
 */
import {
  type Candle,
  createEngineState,
  type EngineState,
  type Reading,
  readClosed,
  readForming,
  stepClosed,
} from "../engine/index.ts";
import { type SignalChange, signalEventId } from "./signal-events.ts";
import type { Timeframe } from "./timeframes.ts";
import { bucketStart, derivedTimeframes, TIMEFRAME_MS } from "./timeframes.ts";
import type { ValidUpdate } from "./validate.ts";

/** One candle row to upsert into the store. */
export interface CandleRow extends Candle {
  symbol: string;
  tf: Timeframe;
  closed: boolean;
}

export interface SeriesRuntime {
  readonly tf: Timeframe;
  state: EngineState;
  /** The forming candle of this timeframe (for derived ones: partial + base forming). */
  forming: Candle | null;
  /** Derived timeframes only: aggregate of the closed base candles of the current bucket. */
  partial: Candle | null;
  /** Bumped on every change; readings are cached per version. */
  version: number;
  /**
   * The engine's `state.count` the store's checkpoint of this series holds (null: none, or one
   * that could not be read). Only a close steps the engine, so a series whose count still equals
   * it needs no new checkpoint: forming updates write candle rows alone.
   */
  storedCount: number | null;
  cached: { version: number; reading: Reading | null } | null;
}

export type ApplyOutcome = "accepted" | "duplicate" | "out_of_order";

/** A fresh series of one timeframe with an empty engine state. */
export function emptySeries(tf: Timeframe): SeriesRuntime {
  return { tf, state: createEngineState(), forming: null, partial: null, version: 0, cached: null, storedCount: 0 };
}

/** Whether the series' engine moved past the checkpoint the store holds of it. */
export function checkpointDue(s: SeriesRuntime): boolean {
  return s.storedCount !== s.state.count;
}

/** Folds `next` into a bucket aggregate starting at `openTime`. */
export function mergeCandle(partial: Candle | null, next: Candle, openTime: number): Candle {
  if (!partial)
    return { openTime, open: next.open, high: next.high, low: next.low, close: next.close, volume: next.volume };
  return {
    openTime,
    open: partial.open,
    high: Math.max(partial.high, next.high),
    low: Math.min(partial.low, next.low),
    close: next.close,
    volume: partial.volume + next.volume,
  };
}

/** Sink outside apply(): a change there would be a bug, and this array is never read. */
const NO_CHANGES: SignalChange[] = [];

export class CoinRuntime {
  readonly symbol: string;
  readonly baseTf: Timeframe;
  readonly series: Map<Timeframe, SeriesRuntime>;
  lastUpdateAt: number;
  /** Provenance: the demo feed's synthetic history (true) or a real feed's (false); never both. */
  readonly demo: boolean;
  /** Where the update being applied records its signal changes. */
  private changes: SignalChange[] = NO_CHANGES;

  constructor(
    symbol: string,
    baseTf: Timeframe,
    lastUpdateAt: number,
    series?: Map<Timeframe, SeriesRuntime>,
    demo = false,
  ) {
    this.symbol = symbol;
    this.demo = demo;
    this.baseTf = baseTf;
    this.lastUpdateAt = lastUpdateAt;
    this.series = series ?? new Map([baseTf, ...derivedTimeframes(baseTf)].map((tf) => [tf, emptySeries(tf)]));
  }

  private get base(): SeriesRuntime {
    return this.series.get(this.baseTf)!;
  }

  /** Open time of the last closed base candle, or null. */
  get lastClosedOpenTime(): number | null {
    return this.base.state.lastOpenTime;
  }

  /**
   * Applies one validated base-timeframe update. A closed candle at or before the last closed
   * one is a duplicate (history is immutable); a forming one there, or one older than the
   * current forming candle, is out of order. A newer candle implicitly closes the forming one.
   * Candle rows to persist go to `rows`; signal changes at the closes it caused go to `changes`.
   */
  apply(update: ValidUpdate, rows: CandleRow[], changes: SignalChange[] = []): ApplyOutcome {
    this.changes = changes;
    try {
      return this.applyCandle(update, rows);
    } finally {
      this.changes = NO_CHANGES;
    }
  }

  private applyCandle(update: ValidUpdate, rows: CandleRow[]): ApplyOutcome {
    const candle: Candle = {
      openTime: update.openTime,
      open: update.open,
      high: update.high,
      low: update.low,
      close: update.close,
      volume: update.volume,
    };
    const lastClosed = this.lastClosedOpenTime;
    if (lastClosed !== null && candle.openTime <= lastClosed) return update.closed ? "duplicate" : "out_of_order";
    const forming = this.base.forming;
    if (forming && candle.openTime < forming.openTime) return "out_of_order";
    if (forming && candle.openTime > forming.openTime) this.closeBase(forming, rows);
    if (update.closed) this.closeBase(candle, rows);
    else this.setBaseForming(candle, rows);
    return "accepted";
  }

  /**
   * Id of the signal event behind the series' confirmed signal, or null before its first break
   * (a forming candle that would change the signal has no event yet: callers pass confirmed).
   */
  signalId(tf: Timeframe): string | null {
    const at = this.series.get(tf)?.state.signalAt ?? null;
    return at === null ? null : signalEventId(this.symbol, tf, at);
  }

  /** Steps a series' engine over a closed candle and records a signal change, if any. */
  private stepSeries(s: SeriesRuntime, candle: Candle): void {
    const before = s.state.signalAt;
    stepClosed(s.state, candle);
    const { signalAt, signal, defense, atr } = s.state;
    if (signalAt === before || signalAt === null) return;
    this.changes.push({
      id: signalEventId(this.symbol, s.tf, signalAt),
      symbol: this.symbol,
      tf: s.tf,
      signal,
      price: candle.close,
      defense,
      atrPct: atr === null ? null : (100 * atr) / candle.close,
      candleOpenTime: signalAt,
    });
  }

  /** The reading of one timeframe now (forming candle included), cached per version. */
  reading(tf: Timeframe): Reading | null {
    const s = this.series.get(tf);
    if (!s) return null;
    if (s.cached?.version === s.version) return s.cached.reading;
    // Fewer closed candles than the ATR period is no_data, forming candle or not (docs/decisions.md).
    const reading = s.state.atr === null ? null : s.forming ? readForming(s.state, s.forming) : readClosed(s.state);
    s.cached = { version: s.version, reading };
    return reading;
  }

  private row(tf: Timeframe, candle: Candle, closed: boolean): CandleRow {
    return { symbol: this.symbol, tf, closed, ...candle };
  }

  private closeBase(candle: Candle, rows: CandleRow[]): void {
    const base = this.base;
    this.stepSeries(base, candle);
    base.forming = null;
    base.version++;
    rows.push(this.row(this.baseTf, candle, true));
    const baseMs = TIMEFRAME_MS[this.baseTf];
    for (const tf of derivedTimeframes(this.baseTf)) {
      const s = this.series.get(tf)!;
      const bucket = bucketStart(candle.openTime, tf);
      // A gap can skip the last base candle of a bucket: a later bucket's candle closes it.
      if (s.partial && s.partial.openTime !== bucket) this.closeDerived(s, rows);
      s.partial = mergeCandle(s.partial, candle, bucket);
      s.version++;
      if (candle.openTime + baseMs === bucket + TIMEFRAME_MS[tf]) {
        this.closeDerived(s, rows);
      } else {
        s.forming = s.partial;
        rows.push(this.row(tf, s.partial, false));
      }
    }
  }

  private closeDerived(s: SeriesRuntime, rows: CandleRow[]): void {
    const candle = s.partial!;
    this.stepSeries(s, candle);
    rows.push(this.row(s.tf, candle, true));
    s.partial = null;
    s.forming = null;
    s.version++;
  }

  private setBaseForming(candle: Candle, rows: CandleRow[]): void {
    const base = this.base;
    base.forming = candle;
    base.version++;
    rows.push(this.row(this.baseTf, candle, false));
    for (const tf of derivedTimeframes(this.baseTf)) {
      const s = this.series.get(tf)!;
      const bucket = bucketStart(candle.openTime, tf);
      if (s.partial && s.partial.openTime !== bucket) this.closeDerived(s, rows);
      s.forming = mergeCandle(s.partial, candle, bucket);
      s.version++;
      rows.push(this.row(tf, s.forming, false));
    }
  }
}
