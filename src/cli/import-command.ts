/**
 * `signals candles import --file F --symbol BTC --tf 1h`: streams a CSV (or .csv.gz) file to
 * IngestService, with a progress bar on a terminal and a summary at the end.
 */
import { statSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import { readCandleFile } from "../market/csv-candles.ts";
import { INGEST_MODE_HEADER } from "../market/ingest-service.ts";

export interface ImportResult {
  file: string;
  symbol: string;
  tf: string;
  accepted: number;
  rejected: number;
  duplicates: number;
  rejections: { index: number; reason: string }[];
}

function progressBar(total: number): { add: (n: number) => void; done: () => void } {
  if (!process.stderr.isTTY || total === 0) return { add: () => {}, done: () => {} };
  let seen = 0;
  let last = 0;
  const draw = () => {
    const pct = Math.min(1, seen / total);
    const width = 30;
    const filled = Math.round(pct * width);
    process.stderr.write(
      `\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${(pct * 100).toFixed(0).padStart(3)}%`,
    );
  };
  return {
    add(n) {
      seen += n;
      const now = Date.now();
      if (now - last > 100) {
        last = now;
        draw();
      }
    },
    done() {
      seen = total;
      draw();
      process.stderr.write("\n");
    },
  };
}

/** Streams the file to IngestService over the given transport and returns the summary. */
export async function importCandles(
  transport: Transport,
  file: string,
  symbol: string,
  tf: string,
): Promise<ImportResult> {
  const size = statSync(file).size;
  const bar = progressBar(size);
  const client = createClient(IngestService, transport);
  async function* requests(): AsyncGenerator<PushCandlesRequest> {
    for await (const u of readCandleFile(file, symbol, tf, bar.add)) {
      yield create(PushCandlesRequestSchema, {
        ...u,
        openTime: BigInt(Number.isSafeInteger(u.openTime) ? u.openTime : -1),
      });
    }
  }
  // An import is history: its signal events are stored for the chart pages but alert no one.
  const res = await client.pushCandles(requests(), { headers: { [INGEST_MODE_HEADER]: "backfill" } });
  bar.done();
  return {
    file,
    symbol: symbol.toUpperCase(),
    tf,
    accepted: Number(res.accepted),
    rejected: Number(res.rejected),
    duplicates: Number(res.duplicates),
    rejections: res.rejections.map((r) => ({ index: Number(r.index), reason: r.reason })),
  };
}
