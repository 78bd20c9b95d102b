/**
 * What the public pages show of the service's output without giving away the product: an
 * example answer of the paid endpoint built from a signal that has ended (track-record/ended-history.ts,
 * the view every viewer without current access gets), and the headline figures of the public
 * live record, pooled over its series exactly as /track-record shows them (real data only,
 * after its costs). Never a current signal; a demo coin's example says it is one.
 */
import { sql } from "drizzle-orm";
import { ENDED_SIGNAL_DELAY_MS } from "../accounts/entitlement.ts";
import type { DbHandle } from "../db/client.ts";
import { TIMEFRAME_MS, TIMEFRAMES, type Timeframe } from "../market/timeframes.ts";
import { BILLING_TEXT, PLAN_NAME } from "../signals/service.ts";
import type { LiveRecordView } from "./live-record-data.ts";

/** The series the example prefers (the API's default timeframe and first default coin). */
const PREFERRED: ReadonlyArray<{ symbol: string; tf: Timeframe }> = [
  { symbol: "BTC", tf: "4h" },
  { symbol: "BTC", tf: "1h" },
  { symbol: "ETH", tf: "4h" },
];

/** An example answer of GET /api/v1/signals and the moment it stands at. */
export interface ExampleAnswer {
  readonly symbol: string;
  readonly tf: Timeframe;
  /** The close that set the example's signal (epoch ms); the signal ended at least a day ago. */
  readonly asOf: number;
  /** The body, in the API's field names and JSON types. */
  readonly body: Record<string, unknown>;
  /** From the demo feed's synthetic prices (only when no real series has an ended signal). */
  readonly demo: boolean;
}

/** Headline figures of the public track record, pooled over every series. */
export interface Headline {
  readonly series: number;
  readonly coins: number;
  readonly trades: number;
  readonly wins: number;
  /** Series whose compounded result beat buying and holding over the same period. */
  readonly beatBuyHold: number;
  readonly from: number | null;
  readonly to: number | null;
}

/** The pooled headline of the public live record (as /track-record shows it to everyone). */
export function headlineOf(record: LiveRecordView): Headline {
  const traded = record.series.filter((v) => v.live.trades.length > 0);
  const fromTimes = traded.map((v) => v.live.trades[0]!.entryTime);
  const toTimes = traded.map((v) => v.live.candles.at(-1)?.openTime ?? v.live.trades.at(-1)!.exitTime);
  return {
    series: traded.length,
    coins: new Set(traded.map((v) => v.symbol)).size,
    trades: traded.reduce((n, v) => n + v.live.trades.length, 0),
    wins: traded.reduce((n, v) => n + v.live.trades.filter((t) => t.growth > 1).length, 0),
    beatBuyHold: traded.filter((v) => (v.totalPct ?? 0) > (v.buyHoldPct ?? 0)).length,
    from: fromTimes.length ? Math.min(...fromTimes) : null,
    to: toTimes.length ? Math.max(...toTimes) : null,
  };
}

/** The newest ended signal of one series (as its ended-signals view, track-record/ended-history.ts, shows it). */
interface EndedSignal {
  symbol: string;
  tf: Timeframe;
  demo: boolean;
  signal: string;
  price: number;
  defense: number | null;
  atr_pct: number | null;
  candle_open_time: number;
}

/**
 * Per series of every coin (its base timeframe and the ones built from it), in the chart
 * index's order (symbol, then timeframe): the last signal a viewer without current access sees,
 * the last one before the signal that was in force ENDED_SIGNAL_DELAY_MS ago (endedHistoryUntil).
 * Two index reads per series in the store, rather than every series' chart data in memory.
 */
async function endedSignals(handle: DbHandle, now: number): Promise<EndedSignal[]> {
  const horizon = now - ENDED_SIGNAL_DELAY_MS;
  const timeframeMs = sql.raw(TIMEFRAMES.map((tf) => `('${tf}', ${TIMEFRAME_MS[tf]}::bigint)`).join(", "));
  return handle.rows<EndedSignal>(sql`
    SELECT c.symbol, t.tf, c.demo, ev.signal, ev.price, ev.defense, ev.atr_pct,
           ev.candle_open_time::float8 AS candle_open_time
    FROM coins c
    JOIN (VALUES ${timeframeMs}) AS b(tf, ms) ON b.tf = c.base_tf
    JOIN (VALUES ${timeframeMs}) AS t(tf, ms) ON t.ms >= b.ms
    CROSS JOIN LATERAL (
      SELECT max(e.candle_open_time) AS open_time FROM signal_events e
      WHERE e.symbol = c.symbol AND e.tf = t.tf AND e.candle_open_time + t.ms <= ${horizon}
    ) in_force
    CROSS JOIN LATERAL (
      SELECT e.signal, e.price, e.defense, e.atr_pct, e.candle_open_time FROM signal_events e
      WHERE e.symbol = c.symbol AND e.tf = t.tf AND e.candle_open_time < in_force.open_time
      ORDER BY e.candle_open_time DESC, e.seq DESC LIMIT 1
    ) ev
    ORDER BY c.symbol, t.ms`);
}

/**
 * The API's answer for one coin as it stood at the close that set the newest ended signal of
 * the preferred series (or of any series with one). `arming` is null: forming setups of the past
 * are not stored. Null when no series has an ended signal yet.
 */
export async function exampleAnswer(handle: DbHandle, now: number): Promise<ExampleAnswer | null> {
  // Real data first: a demo coin is the example only on a server that holds nothing else.
  const withEvents = (await endedSignals(handle, now)).sort((a, b) => Number(a.demo) - Number(b.demo));
  const chosen =
    PREFERRED.map((p) => withEvents.find((v) => v.symbol === p.symbol && v.tf === p.tf && !v.demo)).find(
      (v) => v !== undefined,
    ) ?? withEvents[0];
  if (!chosen) return null;
  const asOf = Number(chosen.candle_open_time) + TIMEFRAME_MS[chosen.tf];
  const entry = {
    symbol: chosen.symbol,
    tf: chosen.tf,
    ok: true,
    price: Number(chosen.price),
    signal: chosen.signal,
    confirmed: true,
    defense: chosen.defense === null ? null : Number(chosen.defense),
    arming: null,
    atr_pct: chosen.atr_pct === null ? null : Number(chosen.atr_pct),
    // As the API marks a demo coin's entry.
    ...(chosen.demo ? { demo: true } : {}),
  };
  const body = {
    ok: true,
    tf: chosen.tf,
    ts: asOf,
    signals: [entry, { symbol: "NEWCOIN", tf: chosen.tf, ok: false, reason: "unknown_symbol" }],
    tier: PLAN_NAME,
    billing: BILLING_TEXT,
    credits_left: 9_999,
  };
  return { symbol: chosen.symbol, tf: chosen.tf, asOf, body, demo: chosen.demo };
}
