/**
 * IngestService: the feeders' client-streaming push, a thin adapter over MarketFeed.ingest.
 * Used over the internal listener and in-process by `signals candles import`.
 */

import { ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { IngestService, PushCandlesRequest } from "../../gen/signals/v1/ingest_pb.js";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import type { MarketFeed } from "./feed.ts";
import { FEEDER_ID_HEADER, leaseAllows, liveLeaseHolders } from "./feed-leases.ts";
import type { CandleUpdate } from "./validate.ts";

/**
 * Request header of PushCandles: `backfill` marks history (signal events are stored, nobody is
 * alerted); `live` (the default) alerts members on signal changes at real-time closes.
 */
export const INGEST_MODE_HEADER = "x-ingest-mode";

/**
 * The stream's updates; with `leases`, each coin's lease holder is looked up (once per stream)
 * before its first update is applied, so the sync admit check can read it.
 */
async function* toUpdates(
  requests: AsyncIterable<PushCandlesRequest>,
  leases?: { db: DbHandle; holders: Map<string, string | undefined> },
): AsyncGenerator<CandleUpdate> {
  let all: Map<string, string> | null = null;
  for await (const r of requests) {
    const symbol = r.symbol.trim().toUpperCase();
    if (leases && !leases.holders.has(symbol)) {
      // One read of every live lease at the stream's first update (a feeder's push names hundreds
      // of coins: a statement per coin delayed a boundary's closes by seconds); a coin without a
      // lease then is looked up again at its first update.
      if (all === null) all = await liveLeaseHolders(leases.db);
      leases.holders.set(symbol, all.get(symbol) ?? (await liveLeaseHolders(leases.db, [symbol])).get(symbol));
    }
    yield {
      symbol: r.symbol,
      tf: r.tf,
      openTime: Number(r.openTime),
      open: r.open,
      high: r.high,
      low: r.low,
      close: r.close,
      volume: r.volume,
      closed: r.closed,
    };
  }
}

/** Builds the IngestService implementation over a market feed; with `db`, feeder leases are enforced. */
export function createIngestService(
  feed: MarketFeed,
  logger: Logger,
  db?: DbHandle,
): ServiceImpl<typeof IngestService> {
  return {
    async pushCandles(requests, ctx) {
      const mode = ctx.requestHeader.get(INGEST_MODE_HEADER)?.trim().toLowerCase() || "live";
      if (mode !== "live" && mode !== "backfill")
        throw serviceError("bad_request", `${INGEST_MODE_HEADER} must be live or backfill`);
      try {
        const feederId = ctx.requestHeader.get(FEEDER_ID_HEADER)?.trim() || null;
        const leases = db ? { db, holders: new Map<string, string | undefined>() } : undefined;
        const admit = leases
          ? (symbol: string) => (leaseAllows(leases.holders.get(symbol), feederId) ? null : ("lease_not_held" as const))
          : undefined;
        const summary = await feed.ingest(toUpdates(requests, leases), {
          alerts: mode === "live",
          ...(admit ? { admit } : {}),
        });
        return {
          accepted: BigInt(summary.accepted),
          rejected: BigInt(summary.rejected),
          duplicates: BigInt(summary.duplicates),
          rejections: summary.rejections.map((r) => ({ index: BigInt(r.index), symbol: r.symbol, reason: r.reason })),
        };
      } catch (err) {
        if (err instanceof ConnectError) throw err;
        logger.error({ err: errorSummary(err) }, "candle ingest failed");
        throw serviceError(
          "unavailable",
          "The candle store could not be written; nothing after the last " +
            "committed batch was kept. Resend: duplicates are ignored.",
        );
      }
    },
  };
}
