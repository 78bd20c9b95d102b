/**
 * The context sources push through DataIngestService on the server's internal listener, on
 * the feeder's own connection (server-client.ts), like `signals data import`.
 */
import type { Client } from "@connectrpc/connect";
import type { DataIngestService } from "../../../gen/signals/v1/data_ingest_pb.js";
import type { PushSummary } from "../../market-data/datasets.ts";

export type DataIngestClient = Client<typeof DataIngestService>;

/** A push answer as plain numbers, for logs. */
export function summaryOf(res: {
  accepted: bigint;
  rejected: bigint;
  duplicates: bigint;
  reasons: { [reason: string]: bigint };
}): Omit<PushSummary, "rejections"> {
  return {
    accepted: Number(res.accepted),
    rejected: Number(res.rejected),
    duplicates: Number(res.duplicates),
    reasons: Object.fromEntries(Object.entries(res.reasons).map(([k, v]) => [k, Number(v)])),
  };
}

/** Yields the rows one by one: the client stream of a push. */
export async function* streamOf<T>(rows: readonly T[]): AsyncGenerator<T> {
  for (const row of rows) yield row;
}
