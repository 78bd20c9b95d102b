/**
 * SignalEventsService: the internal stream of signal events in commit order (seq). A consumer
 * resumes with the id of the last event it saw and gets exactly the ones after it. Reads go to
 * the database, so every process serves the events of every writer.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { asc, eq, gt, max } from "drizzle-orm";
import type { Logger } from "pino";
import { type SignalEvent, SignalEventSchema, type SignalEventsService } from "../../gen/signals/v1/events_pb.js";
import { Signal } from "../../gen/signals/v1/signals_pb.js";
import type { DbHandle } from "../db/client.ts";
import { signalEvents } from "../db/schema.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { isTimeframe, TIMEFRAME_MS } from "../market/timeframes.ts";
import type { SignalEventHub } from "./event-hub.ts";

/** Events read per query while catching up. */
const PAGE = 500;
/** A stream re-reads at least this often even without a notification (a lost NOTIFY heals). */
const POLL_MS = 5_000;

type EventRow = typeof signalEvents.$inferSelect;

function toMessage(row: EventRow): SignalEvent {
  const tfMs = isTimeframe(row.tf) ? TIMEFRAME_MS[row.tf] : 0;
  return create(SignalEventSchema, {
    id: row.id,
    seq: BigInt(row.seq),
    symbol: row.symbol,
    tf: row.tf,
    signal: Signal[row.signal as keyof typeof Signal] ?? Signal.UNSPECIFIED,
    price: row.price,
    defense: row.defense ?? undefined,
    atrPct: row.atrPct ?? undefined,
    candleOpenTime: BigInt(row.candleOpenTime),
    candleCloseTime: BigInt(row.candleOpenTime + tfMs),
    createdAt: BigInt(row.createdAt.getTime()),
    live: row.live,
    demo: row.demo,
  });
}

/** The seq a stream starts after. */
async function startingSeq(db: DbHandle, afterId: string, fromStart: boolean): Promise<number> {
  if (afterId !== "") {
    const [row] = await db.db.select({ seq: signalEvents.seq }).from(signalEvents).where(eq(signalEvents.id, afterId));
    if (!row) throw serviceError("not_found", `no signal event with id "${afterId.slice(0, 80)}"`);
    return row.seq;
  }
  if (fromStart) return 0;
  const [row] = await db.db.select({ last: max(signalEvents.seq) }).from(signalEvents);
  return row?.last ?? 0;
}

export function createSignalEventsService(deps: {
  db: DbHandle;
  hub: SignalEventHub;
  logger: Logger;
}): ServiceImpl<typeof SignalEventsService> {
  const { db, hub } = deps;
  return {
    async *streamSignalEvents(request, ctx) {
      let cursor = await startingSeq(db, request.afterId.trim(), request.fromStart);
      while (!ctx.signal.aborted) {
        if (hub.closed)
          throw serviceError(
            "unavailable",
            "the server is shutting down; reconnect with after_id set to the last event id you received",
          );
        const seen = hub.wakeups;
        let rows: EventRow[];
        try {
          rows = await db.db
            .select()
            .from(signalEvents)
            .where(gt(signalEvents.seq, cursor))
            .orderBy(asc(signalEvents.seq))
            .limit(PAGE);
        } catch (err) {
          deps.logger.error({ err: errorSummary(err) }, "signal event stream read failed");
          throw serviceError(
            "unavailable",
            "signal events cannot be read right now; reconnect with " +
              "after_id set to the last event id you received",
          );
        }
        for (const row of rows) {
          yield { event: toMessage(row) };
          cursor = row.seq;
        }
        if (rows.length < PAGE) await hub.wait(seen, ctx.signal, POLL_MS);
      }
    },
  };
}
