/**
 * Candles streamed to a server's internal listener over gRPC (IngestService.PushCandles), as a
 * feeder does; resolves once the server has committed them and answered.
 */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import type { Candle } from "../../src/engine/index.ts";

/** One closed candle of a coin. */
export interface CoinCandle {
  symbol: string;
  candle: Candle;
}

/** Pushes closed candles of timeframe `tf` in one stream; returns how many the server accepted. */
export async function pushClosedCandles(
  internalUrl: string,
  token: string,
  mode: "live" | "backfill",
  tf: string,
  updates: readonly CoinCandle[],
): Promise<bigint> {
  const sessionManager = new Http2SessionManager(internalUrl);
  try {
    const bearer = { authorization: `Bearer ${token}` };
    const client = createClient(IngestService, createGrpcTransport({ baseUrl: internalUrl, sessionManager }));
    async function* requests(): AsyncGenerator<PushCandlesRequest> {
      for (const { symbol, candle } of updates)
        yield create(PushCandlesRequestSchema, {
          symbol,
          tf,
          ...candle,
          openTime: BigInt(candle.openTime),
          closed: true,
        });
    }
    const res = await client.pushCandles(requests(), { headers: { ...bearer, "x-ingest-mode": mode } });
    return res.accepted;
  } finally {
    sessionManager.abort();
  }
}
