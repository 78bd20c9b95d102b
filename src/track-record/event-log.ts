/**
 * The tamper-evident log of live signal events as the web shows it: each day's chain head on
 * /track-record, and the whole log as a file for signed-in members (never through the API).
 * The chain itself is market/event-chain.ts; it is written in the market's transaction.
 */
import { sql } from "drizzle-orm";
import type { DbHandle } from "../db/client.ts";
import { type ChainEntry, confirmedAtOf, formatChainLog } from "../market/event-chain.ts";
import { TIMEFRAME_MS } from "../market/timeframes.ts";

/** The MYT (UTC+8) calendar day the site uses for dates. */
const MYT_OFFSET_MS = 8 * 3_600_000;
const DAY_MS = 86_400_000;

/** The last event of one day in the chain: its hash vouches for every event up to it. */
export interface DailyChainHead {
  /** MYT day of the events' confirmation, YYYY-MM-DD. */
  readonly day: string;
  /** Events confirmed that day. */
  readonly events: number;
  /** Hash of the day's last event in chain order. */
  readonly head: string;
}

type Num = number | string;

function tfDurations() {
  return sql.join(
    Object.entries(TIMEFRAME_MS).map(([tf, ms]) => sql`(${tf}::text, ${ms}::bigint)`),
    sql`, `,
  );
}

/** Each MYT day's chain head, newest day first, at most `days` days. */
export async function dailyChainHeads(handle: DbHandle, days = 60): Promise<DailyChainHead[]> {
  const rows = await handle.rows<{ day: Num; events: Num; head: string }>(sql`
    WITH tfs(tf, ms) AS (VALUES ${tfDurations()}),
    chained AS (
      SELECT e.seq, e.chain_hash, (e.candle_open_time + t.ms + ${MYT_OFFSET_MS}) / ${DAY_MS} AS day
        FROM signal_events e JOIN tfs t ON t.tf = e.tf
       WHERE e.chain_hash IS NOT NULL)
    SELECT DISTINCT ON (day) day, count(*) OVER (PARTITION BY day) AS events, chain_hash AS head
      FROM chained ORDER BY day DESC, seq DESC LIMIT ${days}`);
  return rows.map((r) => ({
    day: new Date(Number(r.day) * DAY_MS).toISOString().slice(0, 10),
    events: Number(r.events),
    head: r.head,
  }));
}

/** The chain's newest event's seq: what the heads' cache is stamped with (one indexed read). */
export async function chainHeadSeq(handle: DbHandle): Promise<number | null> {
  const [row] = await handle.rows<{ seq: Num | null }>(
    sql`SELECT max(seq) AS seq FROM signal_events WHERE chain_hash IS NOT NULL`,
  );
  return row?.seq === null || row?.seq === undefined ? null : Number(row.seq);
}

/** The chained events in chain order, a page at a time. */
export async function* chainLogPages(handle: DbHandle, pageSize = 2000): AsyncGenerator<ChainEntry[]> {
  let after = 0;
  for (;;) {
    const rows = await handle.rows<{
      seq: Num;
      id: string;
      symbol: string;
      tf: string;
      signal: string;
      price: number;
      defense: number | null;
      candle_open_time: Num;
      chain_prev: string;
      chain_hash: string;
    }>(sql`
      SELECT seq, id, symbol, tf, signal, price, defense, candle_open_time, chain_prev, chain_hash
        FROM signal_events WHERE chain_hash IS NOT NULL AND seq > ${after} ORDER BY seq LIMIT ${pageSize}`);
    if (rows.length === 0) return;
    yield rows.map((r) => ({
      id: r.id,
      symbol: r.symbol,
      tf: r.tf,
      signal: r.signal,
      confirmedAt: confirmedAtOf(r.tf, Number(r.candle_open_time)),
      price: Number(r.price),
      defense: r.defense === null ? null : Number(r.defense),
      prev: r.chain_prev,
      hash: r.chain_hash,
    }));
    if (rows.length < pageSize) return;
    after = Number(rows[rows.length - 1]!.seq);
  }
}

/**
 * The log file (JSON lines, oldest first), streamed as the pages are read; a failed read breaks the download rather
 * than shortening it.
 */
export function chainLogStream(
  pages: AsyncGenerator<ChainEntry[]>,
  onError: (err: unknown) => void = () => {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await pages.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(formatChainLog(next.value)));
      } catch (err) {
        onError(err);
        controller.error(err);
      }
    },
    async cancel() {
      await pages.return(undefined);
    },
  });
}

/** The daily heads, read again only when the chain grew (stamp: its newest seq). */
export class DailyHeadsCache {
  private cached: { stamp: number | null; heads: Promise<DailyChainHead[]> } | null = null;
  private readonly db: DbHandle;
  constructor(db: DbHandle) {
    this.db = db;
  }

  async get(): Promise<DailyChainHead[]> {
    const stamp = await chainHeadSeq(this.db);
    if (this.cached === null || this.cached.stamp !== stamp) {
      const heads = dailyChainHeads(this.db);
      this.cached = { stamp, heads };
      heads.catch(() => {
        if (this.cached?.heads === heads) this.cached = null;
      });
    }
    return this.cached.heads;
  }
}
