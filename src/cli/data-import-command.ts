/**
 * `signals data import --dataset news --file F`: streams a JSON-lines file (or .jsonl.gz) to
 * DataIngestService, one object per line with the proto field names of the dataset's push
 * message (snake_case), e.g. for news:
 *
 *   {"id":"n-1","time":"2026-11-15T04:00:00Z","title":"…","source":"…","url":"https://…","coins":["BTC"]}
 *
 * Times are epoch milliseconds or ISO-8601 date-times with an offset. The service validates each
 * row with the rules of the live push; the lines it cannot even receive are rejected here, with
 * the same report: `invalid_json` (not a JSON object), `unknown_field` (a name the dataset does
 * not have: a typo would otherwise drop a value silently), `wrong_type` (e.g. a number sent as
 * a string). Everything accepted is written in one transaction when the file ends, so a failed
 * import stores nothing and can simply be run again (stored rows then count as duplicates).
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";
import { create, type DescMessage } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import {
  DataIngestService,
  PushDerivativesRequestSchema,
  PushFundamentalsRequestSchema,
  PushMacroRequestSchema,
  PushNewsRequestSchema,
} from "../../gen/signals/v1/data_ingest_pb.js";
import { addRejection, emptyPushSummary, MAX_REPORTED, type PushedDataset, type PushSummary } from "../market-data/datasets.ts";
import { parseInstant } from "../market-data/request.ts";

type FieldType = "string" | "number" | "integer" | "time" | "strings";

/** The JSON fields of each dataset's rows (proto names), with what JSON type each takes. */
const FIELDS: Record<PushedDataset, Record<string, { type: FieldType; local: string; optional?: boolean }>> = {
  derivatives: {
    symbol: { type: "string", local: "symbol" },
    venue: { type: "string", local: "venue" },
    time: { type: "time", local: "time" },
    funding_rate: { type: "number", local: "fundingRate", optional: true },
    open_interest_usd: { type: "number", local: "openInterestUsd", optional: true },
    long_short_ratio: { type: "number", local: "longShortRatio", optional: true },
  },
  news: {
    id: { type: "string", local: "id" },
    time: { type: "time", local: "time" },
    title: { type: "string", local: "title" },
    source: { type: "string", local: "source" },
    url: { type: "string", local: "url" },
    coins: { type: "strings", local: "coins" },
  },
  macro: {
    series: { type: "string", local: "series" },
    time: { type: "time", local: "time" },
    value: { type: "number", local: "value" },
    unit: { type: "string", local: "unit" },
    source: { type: "string", local: "source" },
  },
  fundamentals: {
    symbol: { type: "string", local: "symbol" },
    time: { type: "time", local: "time" },
    circulating_supply: { type: "number", local: "circulatingSupply" },
    max_supply: { type: "number", local: "maxSupply", optional: true },
    market_cap_usd: { type: "number", local: "marketCapUsd" },
    rank: { type: "integer", local: "rank", optional: true },
    source: { type: "string", local: "source" },
    total_supply: { type: "number", local: "totalSupply", optional: true },
    fully_diluted_valuation_usd: { type: "number", local: "fullyDilutedValuationUsd", optional: true },
    ath_usd: { type: "number", local: "athUsd", optional: true },
    ath_time: { type: "time", local: "athTime", optional: true },
  },
};

const SCHEMAS: Record<PushedDataset, DescMessage> = {
  derivatives: PushDerivativesRequestSchema,
  news: PushNewsRequestSchema,
  macro: PushMacroRequestSchema,
  fundamentals: PushFundamentalsRequestSchema,
};

/** The key shown for a line refused here (same as the service's: symbol, id or series). */
const KEY_FIELD: Record<PushedDataset, string> = { derivatives: "symbol", news: "id", macro: "series", fundamentals: "symbol" };

/**
 * One JSON line → the push message's fields, or the reason it cannot be sent. Missing
 * required fields are sent empty (NaN for numbers, 0 for times) and refused by the service
 * with its own reason (invalid_symbol, non_finite_value, invalid_time, …).
 */
export function rowFromJsonLine(dataset: PushedDataset, line: string): { ok: true; init: Record<string, unknown> } | { ok: false; reason: string; key: string } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, reason: "invalid_json", key: "" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, reason: "invalid_json", key: "" };
  const object = value as Record<string, unknown>;
  const keyValue = object[KEY_FIELD[dataset]];
  const key = typeof keyValue === "string" ? keyValue.slice(0, 64) : "";
  const fields = FIELDS[dataset];
  const init: Record<string, unknown> = {};
  for (const name of Object.keys(object)) {
    if (!Object.hasOwn(fields, name)) return { ok: false, reason: "unknown_field", key };
  }
  for (const [name, field] of Object.entries(fields)) {
    const v = object[name];
    if (v === undefined || v === null) {
      if (field.optional) continue;
      init[field.local] = field.type === "number" ? Number.NaN : field.type === "time" ? 0n : field.type === "strings" ? [] : "";
      continue;
    }
    switch (field.type) {
      case "string":
        if (typeof v !== "string") return { ok: false, reason: "wrong_type", key };
        init[field.local] = v;
        break;
      case "number":
        if (typeof v !== "number") return { ok: false, reason: "wrong_type", key };
        init[field.local] = v;
        break;
      case "integer":
        if (typeof v !== "number" || !Number.isInteger(v)) return { ok: false, reason: "wrong_type", key };
        // Outside int32 the service's rank check refuses it (invalid_rank).
        init[field.local] = Math.abs(v) > 2 ** 31 - 1 ? 0 : v;
        break;
      case "strings":
        if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) return { ok: false, reason: "wrong_type", key };
        init[field.local] = v;
        break;
      case "time": {
        if (typeof v !== "number" && typeof v !== "string") return { ok: false, reason: "wrong_type", key };
        // An unreadable time goes as -1: the service refuses it as invalid_time.
        const at = typeof v === "number" ? v : parseInstant(v);
        init[field.local] = Number.isSafeInteger(at) && at > 0 ? BigInt(at) : -1n;
        break;
      }
    }
  }
  return { ok: true, init };
}

export interface DataImportResult {
  dataset: PushedDataset;
  file: string;
  accepted: number;
  rejected: number;
  duplicates: number;
  /** The first rejections: row index (0-based, blank lines not counted), line number (1-based), key, reason. */
  rejections: { index: number; line: number; key: string; reason: string }[];
  reasons: Record<string, number>;
}

/** Streams the file to DataIngestService over the given transport and returns the merged summary. */
export async function importDataset(transport: Transport, dataset: PushedDataset, file: string): Promise<DataImportResult> {
  const raw = createReadStream(file);
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  // A read error (missing file, corrupt gzip) must end the stream with an error, not hang it.
  raw.on("error", (err) => input.destroy(err));
  const lines = createInterface({ input, crlfDelay: Infinity });
  const local = emptyPushSummary();
  /** For each row sent, its row index and line number in the file. */
  const sent: { index: number; line: number }[] = [];
  const lineOf = new Map<number, number>();
  const schema = SCHEMAS[dataset];
  async function* requests() {
    let index = 0;
    let lineNumber = 0;
    for await (const line of lines) {
      lineNumber++;
      if (line.trim() === "") continue;
      const at = index++;
      lineOf.set(at, lineNumber);
      const row = rowFromJsonLine(dataset, line);
      if (!row.ok) {
        addRejection(local, { index: at, key: row.key, reason: row.reason });
        continue;
      }
      sent.push({ index: at, line: lineNumber });
      yield create(schema, row.init as never);
    }
  }
  const client = createClient(DataIngestService, transport);
  const stream = requests();
  const res =
    dataset === "derivatives"
      ? await client.pushDerivatives(stream as never)
      : dataset === "news"
        ? await client.pushNews(stream as never)
        : dataset === "macro"
          ? await client.pushMacro(stream as never)
          : await client.pushFundamentals(stream as never);
  return merge(dataset, file, local, res, sent, lineOf);
}

function merge(
  dataset: PushedDataset,
  file: string,
  local: PushSummary,
  res: { accepted: bigint; rejected: bigint; duplicates: bigint; rejections: { index: bigint; key: string; reason: string }[]; reasons: { [reason: string]: bigint } },
  sent: { index: number; line: number }[],
  lineOf: Map<number, number>,
): DataImportResult {
  // The service numbers the rows it received; map them back to the file's rows.
  const remote = res.rejections.map((r) => ({ index: sent[Number(r.index)]?.index ?? -1, key: r.key, reason: r.reason }));
  const all = [...local.rejections, ...remote].sort((a, b) => a.index - b.index).slice(0, MAX_REPORTED);
  const reasons: Record<string, number> = { ...local.reasons };
  for (const [reason, n] of Object.entries(res.reasons)) reasons[reason] = (reasons[reason] ?? 0) + Number(n);
  return {
    dataset,
    file,
    accepted: Number(res.accepted),
    rejected: local.rejected + Number(res.rejected),
    duplicates: Number(res.duplicates),
    rejections: all.map((r) => ({ index: r.index, line: lineOf.get(r.index) ?? 0, key: r.key, reason: r.reason })),
    reasons,
  };
}
