/**
 * DataIngestService: the feeders' client-streaming push of the free endpoints' datasets, on the
 * internal listener (bearer token) and in-process for `signals data import`. Each stream is
 * validated row by row and written in ONE transaction at its end: the answer comes after the
 * commit, and a stream that fails applies nothing.
 */
import { ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import type {
  DataIngestService,
  PushDerivativesRequest,
  PushFundamentalsRequest,
  PushMacroRequest,
  PushNewsRequest,
} from "../../gen/signals/v1/data_ingest_pb.js";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { collectStream, type InputOf, type PushedDataset, type PushSummary, TooManyRowsError } from "./datasets.ts";
import { writeDataset } from "./store.ts";

export interface DataIngestDeps {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Epoch ms from an int64 field; out-of-range values become -1 (rejected as invalid_time). */
function timeOf(value: bigint): number {
  return value <= 0n || value > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(value);
}

async function* map<A, B>(source: AsyncIterable<A>, f: (a: A) => B): AsyncGenerator<B> {
  for await (const item of source) yield f(item);
}

const derivativesInput = (r: PushDerivativesRequest): InputOf<"derivatives"> => ({
  symbol: r.symbol,
  venue: r.venue,
  time: timeOf(r.time),
  fundingRate: r.fundingRate,
  openInterestUsd: r.openInterestUsd,
  longShortRatio: r.longShortRatio,
});
const newsInput = (r: PushNewsRequest): InputOf<"news"> => ({
  id: r.id,
  time: timeOf(r.time),
  title: r.title,
  source: r.source,
  url: r.url,
  coins: r.coins,
});
const macroInput = (r: PushMacroRequest): InputOf<"macro"> => ({
  series: r.series,
  time: timeOf(r.time),
  value: r.value,
  unit: r.unit,
  source: r.source,
});
const fundamentalsInput = (r: PushFundamentalsRequest): InputOf<"fundamentals"> => ({
  symbol: r.symbol,
  time: timeOf(r.time),
  circulatingSupply: r.circulatingSupply,
  maxSupply: r.maxSupply,
  marketCapUsd: r.marketCapUsd,
  rank: r.rank,
  source: r.source,
  totalSupply: r.totalSupply,
  fullyDilutedValuationUsd: r.fullyDilutedValuationUsd,
  athUsd: r.athUsd,
  athTime: r.athTime === undefined ? undefined : timeOf(r.athTime),
});

/** The response fields shared by the four Push*Response messages. */
function responseOf(summary: PushSummary) {
  return {
    accepted: BigInt(summary.accepted),
    rejected: BigInt(summary.rejected),
    duplicates: BigInt(summary.duplicates),
    rejections: summary.rejections.map((r) => ({ index: BigInt(r.index), key: r.key, reason: r.reason })),
    reasons: Object.fromEntries(Object.entries(summary.reasons).map(([reason, n]) => [reason, BigInt(n)])),
  };
}

/**
 * Validates and stores one stream of a dataset; resolves after the commit. `demo` marks the
 * demo feed's sample rows: they are refused (`real_data_held`) where real rows are held, and
 * a real stream replaces the demo rows of its coins (or of its whole dataset: news, macro).
 */
export async function pushDataset<D extends PushedDataset>(
  deps: DataIngestDeps,
  dataset: D,
  source: AsyncIterable<InputOf<D>> | Iterable<InputOf<D>>,
  { demo = false }: { demo?: boolean } = {},
): Promise<PushSummary> {
  let collected: Awaited<ReturnType<typeof collectStream<D>>>;
  try {
    collected = await collectStream(dataset, source, deps.clock());
  } catch (err) {
    if (err instanceof TooManyRowsError)
      throw serviceError("payload_too_large", `${err.message}; nothing of this stream was stored.`);
    throw err;
  }
  const { rows, summary } = collected;
  let written: number;
  let refused: number;
  try {
    ({ written, refused } = await writeDataset(deps.db, dataset, rows, deps.clock(), { demo }));
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    deps.logger.error({ err: errorSummary(err), dataset }, "dataset write failed");
    const resend = "Resend it (rows already stored count as duplicates).";
    throw serviceError(
      "unavailable",
      `The ${dataset} rows could not be written; nothing of this stream was stored. ${resend}`,
    );
  }
  summary.accepted = written;
  summary.duplicates += rows.length - refused - written;
  if (refused > 0) {
    summary.rejected += refused;
    summary.reasons.real_data_held = (summary.reasons.real_data_held ?? 0) + refused;
  }
  return summary;
}

/** Builds the DataIngestService implementation over the database. */
export function createDataIngestService(deps: DataIngestDeps): ServiceImpl<typeof DataIngestService> {
  return {
    async pushDerivatives(requests) {
      return responseOf(await pushDataset(deps, "derivatives", map(requests, derivativesInput)));
    },
    async pushNews(requests) {
      return responseOf(await pushDataset(deps, "news", map(requests, newsInput)));
    },
    async pushMacro(requests) {
      return responseOf(await pushDataset(deps, "macro", map(requests, macroInput)));
    },
    async pushFundamentals(requests) {
      return responseOf(await pushDataset(deps, "fundamentals", map(requests, fundamentalsInput)));
    },
  };
}
