/**
 * The live record of one coin and timeframe (docs/track-record.md, "The live record"): only the
 * signals the service issued live, filled at the open of the candle after the signal's close,
 * after a fee and a slippage on each side and, for shorts, a funding cost. Pure: no I/O, no clock.
 *
 * The exit rules are the chart pages' (track-record.ts: the defense close, the opposite signal,
 * an invalidation) and one position is held at a time (backtest.ts's takenTrades); only the
 * fills and the costs differ, by the research's accounting (trade-costs.ts).
 */
import { takenTrades } from "./backtest.ts";
import { computeTrackRecord, type DirectionalSignal, type ExitReason, type TrackEvent } from "./track-record.ts";
import { type Costs, positionValue } from "./trade-costs.ts";

/** Costs of the live record, in percent per side (funding in percent per 8 hours a short is held). */
export interface LiveCosts {
  readonly feePct: number;
  readonly slippagePct: number;
  /** Charged to a short pro rata for the time held; 0 states that none is assumed. */
  readonly shortFundingPctPer8h: number;
}

/** The stated defaults: 0.1% fee and 0.03% slippage per side; no funding (see docs/decisions.md). */
export const DEFAULT_LIVE_COSTS: LiveCosts = Object.freeze({ feePct: 0.1, slippagePct: 0.03, shortFundingPctPer8h: 0 });

const EIGHT_HOURS_MS = 8 * 3_600_000;

/** A stored signal event with whether it was issued live (its candle closed in real time, alerts went out). */
export interface LiveEvent extends TrackEvent {
  readonly live: boolean;
}

/** A closed candle with the open the next fill needs. */
export interface LiveCandle {
  readonly openTime: number;
  readonly open: number;
  readonly close: number;
}

/** One trade of the live record. */
export interface LiveTrade {
  readonly signal: DirectionalSignal;
  readonly direction: 1 | -1;
  /** Open time of the candle whose close issued the signal. */
  readonly signalTime: number;
  /** Open time of the candle at whose open it was entered, and that open. */
  readonly entryTime: number;
  readonly entryPrice: number;
  /** Open time of the candle at whose open it was left (for a liquidation: of the candle at whose close). */
  readonly exitTime: number;
  readonly exitPrice: number;
  readonly exitReason: ExitReason | "liquidated";
  /** Equity multiple after every cost (0 when liquidated). */
  readonly growth: number;
  /** Funding charged, as a fraction of the position (0 for longs). */
  readonly funding: number;
  /** Candle indices (into the series' candles) of the entry fill and the exit fill. */
  readonly entryIndex: number;
  readonly exitIndex: number;
}

export interface LiveSeries {
  /** Open time of the candle of the series' first live signal; null when it has none. */
  readonly liveSince: number | null;
  /** Closed trades, oldest first. */
  readonly trades: readonly LiveTrade[];
  /** A position held at the last close, marked at it (not in `trades`). */
  readonly open: LiveTrade | null;
  /** Candles from `liveSince` on (what the marks are at). */
  readonly candles: readonly LiveCandle[];
  /** Equity at each candle's close (1 = the start), every trade / longs only / shorts only. */
  readonly equity: Float64Array;
  readonly longEquity: Float64Array;
  readonly shortEquity: Float64Array;
  /** 1 when a position is held over the candle, else 0. */
  readonly exposure: Uint8Array;
}

function toCosts(costs: LiveCosts): Costs {
  return { fee: costs.feePct / 100, slippage: costs.slippagePct / 100 };
}

/** Index of the first candle whose openTime is ≥ time (candles sorted by openTime). */
export function lowerBound(candles: ReadonlyArray<{ readonly openTime: number }>, time: number): number {
  let lo = 0;
  let hi = candles.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (candles[mid]!.openTime < time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the candle opening at `time`, or −1. */
function indexAt(candles: readonly LiveCandle[], time: number): number {
  const i = lowerBound(candles, time);
  return candles[i]?.openTime === time ? i : -1;
}

/** Funding a short has paid after `heldMs`, as a fraction of the position. */
function fundingOf(direction: 1 | -1, heldMs: number, costs: LiveCosts): number {
  return direction === -1 ? (costs.shortFundingPctPer8h / 100) * (heldMs / EIGHT_HOURS_MS) : 0;
}

/** Value of a position entered at `entryIndex`'s open, marked at `price` after `heldMs`. */
function markValue(direction: 1 | -1, entryPrice: number, price: number, heldMs: number, costs: LiveCosts): number {
  return Math.max(0, positionValue(direction, entryPrice, price, toCosts(costs)) - fundingOf(direction, heldMs, costs));
}

/**
 * The live record of one series. `events` and `candles` are the series' stored ones (any
 * order); `tfMs` its candle length. Trades are opened only by live events; any later event
 * (live or not: a backfilled one changed the signal the API served too) can end them.
 */
export function computeLiveSeries(
  events: readonly LiveEvent[],
  allCandles: readonly LiveCandle[],
  tfMs: number,
  costs: LiveCosts = DEFAULT_LIVE_COSTS,
): LiveSeries {
  const ordered = [...events].sort((a, b) => a.candleOpenTime - b.candleOpenTime);
  const liveSince = ordered.find((e) => e.live)?.candleOpenTime ?? null;
  const candles =
    liveSince === null
      ? []
      : [...allCandles].filter((c) => c.openTime >= liveSince).sort((a, b) => a.openTime - b.openTime);
  const empty = {
    liveSince,
    trades: [],
    open: null,
    candles,
    equity: new Float64Array(candles.length).fill(1),
    longEquity: new Float64Array(candles.length).fill(1),
    shortEquity: new Float64Array(candles.length).fill(1),
    exposure: new Uint8Array(candles.length),
  };
  if (liveSince === null || candles.length === 0) return empty;

  const seen = ordered.filter((e) => e.candleOpenTime >= liveSince);
  const issuedLive = new Set(seen.filter((e) => e.live).map((e) => e.candleOpenTime));
  const record = computeTrackRecord(seen, candles);
  const signalTrades = record.trades.filter((t) => issuedLive.has(t.entryTime));
  const { closed, open: openSignal } = takenTrades(signalTrades);

  const trades: LiveTrade[] = [];
  let open: LiveTrade | null = null;
  const last = candles.length - 1;
  for (const t of [...closed, ...(openSignal === null ? [] : [openSignal])]) {
    const entryIndex = indexAt(candles, t.entryTime) + 1;
    if (entryIndex === 0 || entryIndex > last) break; // its fill's candle has not closed yet
    const entryPrice = candles[entryIndex]!.open;
    const exitSignalIndex = t.exitReason === "open" ? -1 : indexAt(candles, t.exitTime);
    const exitIndex = exitSignalIndex === -1 ? -1 : exitSignalIndex + 1;
    // A short that loses its whole stake at a close on the way is liquidated there.
    let liquidatedAt = -1;
    const lastHeld = exitIndex === -1 || exitIndex > last ? last : exitIndex - 1;
    if (t.direction === -1) {
      for (let k = entryIndex; k <= lastHeld; k++) {
        if (
          markValue(
            -1,
            entryPrice,
            candles[k]!.close,
            candles[k]!.openTime + tfMs - candles[entryIndex]!.openTime,
            costs,
          ) === 0
        ) {
          liquidatedAt = k;
          break;
        }
      }
    }
    const base = {
      signal: t.signal,
      direction: t.direction,
      signalTime: t.entryTime,
      entryTime: candles[entryIndex]!.openTime,
      entryPrice,
      entryIndex,
    };
    if (liquidatedAt !== -1) {
      const c = candles[liquidatedAt]!;
      trades.push({
        ...base,
        exitTime: c.openTime,
        exitPrice: c.close,
        exitReason: "liquidated",
        growth: 0,
        funding: fundingOf(-1, c.openTime + tfMs - base.entryTime, costs),
        exitIndex: liquidatedAt + 1,
      });
      break; // the stake is gone: nothing is left to trade with
    }
    if (exitIndex === -1 || exitIndex > last) {
      const c = candles[last]!;
      const heldMs = c.openTime + tfMs - base.entryTime;
      open = {
        ...base,
        exitTime: c.openTime,
        exitPrice: c.close,
        exitReason: "open",
        growth: markValue(t.direction, entryPrice, c.close, heldMs, costs),
        funding: fundingOf(t.direction, heldMs, costs),
        exitIndex: last + 1,
      };
      break;
    }
    const exit = candles[exitIndex]!;
    const heldMs = exit.openTime - base.entryTime;
    trades.push({
      ...base,
      exitTime: exit.openTime,
      exitPrice: exit.open,
      exitReason: t.exitReason,
      growth: markValue(t.direction, entryPrice, exit.open, heldMs, costs),
      funding: fundingOf(t.direction, heldMs, costs),
      exitIndex,
    });
  }
  const held = open === null ? trades : [...trades, open];
  return {
    liveSince,
    trades,
    open,
    candles,
    equity: markEquity(held, candles, tfMs, costs),
    longEquity: markEquity(
      held.filter((t) => t.direction === 1),
      candles,
      tfMs,
      costs,
    ),
    shortEquity: markEquity(
      held.filter((t) => t.direction === -1),
      candles,
      tfMs,
      costs,
    ),
    exposure: exposureOf(held, candles.length),
  };
}

/**
 * Equity at every close: banked results while flat, the held position's liquidation value after
 * costs while in one. A trade left at a candle's open is banked before that candle's close.
 */
export function markEquity(
  trades: readonly LiveTrade[],
  candles: readonly LiveCandle[],
  tfMs: number,
  costs: LiveCosts,
): Float64Array {
  const equity = new Float64Array(candles.length);
  let banked = 1;
  let next = 0;
  for (let i = 0; i < candles.length; i++) {
    while (next < trades.length && trades[next]!.exitReason !== "open" && trades[next]!.exitIndex <= i) {
      banked *= trades[next]!.growth;
      next++;
    }
    const t = trades[next];
    if (t !== undefined && t.entryIndex <= i && i < t.exitIndex) {
      const c = candles[i]!;
      equity[i] = banked * markValue(t.direction, t.entryPrice, c.close, c.openTime + tfMs - t.entryTime, costs);
    } else {
      equity[i] = banked;
    }
  }
  return equity;
}

/** 1 over every candle a position is held through (from its entry open to its exit open). */
function exposureOf(trades: readonly LiveTrade[], length: number): Uint8Array {
  const exposure = new Uint8Array(length);
  for (const t of trades) for (let i = t.entryIndex; i < Math.min(t.exitIndex, length); i++) exposure[i] = 1;
  return exposure;
}
