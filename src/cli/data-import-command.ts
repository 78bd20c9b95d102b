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
import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { DataIngestService } from "../../gen/signals/v1/data_ingest_pb.js";
import {
  addRejection,
  emptyPushSummary,
  MAX_REPORTED,
  type PushedDataset,
  type PushSummary,
} from "../market-data/datasets.ts";
import { parseInstant } from "../market-data/request.ts";

/** Each dataset's push method: its request message is the row a JSON line describes. */
const PUSH = {
  derivatives: DataIngestService.method.pushDerivatives,
  news: DataIngestService.method.pushNews,
  macro: DataIngestService.method.pushMacro,
  fundamentals: DataIngestService.method.pushFundamentals,
} as const satisfies Record<PushedDataset, unknown>;

/** The key shown for a line refused here (same as the service's: symbol, id or series). */
const KEY_FIELD: Record<PushedDataset, string> = {
  derivatives: "symbol",
  news: "id",
  macro: "series",
  fundamentals: "symbol",
};

type Read = { ok: true; value: unknown } | { ok: false };
const WRONG_TYPE: Read = { ok: false };

/**
 * A JSON value as the field's proto type: strings, doubles, int32 (outside its range sent as 0,
 * which the service's rank check refuses), a list of strings, and int64, which in every push
 * message is a time: epoch milliseconds or an ISO-8601 date-time (unreadable → -1, refused by
 * the service as invalid_time).
 */
function readValue(field: DescField, v: unknown): Read {
  if (field.fieldKind === "list") {
    return Array.isArray(v) && v.every((s) => typeof s === "string") ? { ok: true, value: v } : WRONG_TYPE;
  }
  if (field.fieldKind !== "scalar") throw new Error(`${field.parent.typeName}.${field.name}: not a row field`);
  switch (field.scalar) {
    case ScalarType.STRING:
      return typeof v === "string" ? { ok: true, value: v } : WRONG_TYPE;
    case ScalarType.DOUBLE:
      return typeof v === "number" ? { ok: true, value: v } : WRONG_TYPE;
    case ScalarType.INT32:
      if (typeof v !== "number" || !Number.isInteger(v)) return WRONG_TYPE;
      return { ok: true, value: Math.abs(v) > 2 ** 31 - 1 ? 0 : v };
    case ScalarType.INT64: {
      if (typeof v !== "number" && typeof v !== "string") return WRONG_TYPE;
      const at = typeof v === "number" ? v : parseInstant(v);
      return { ok: true, value: Number.isSafeInteger(at) && at > 0 ? BigInt(at) : -1n };
    }
    default:
      throw new Error(`${field.parent.typeName}.${field.name}: no JSON rule for its type`);
  }
}

/** What a missing required field is sent as, for the service to refuse with its own reason. */
function emptyValue(field: DescField): unknown {
  if (field.fieldKind === "list") return [];
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.DOUBLE) return Number.NaN;
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.INT64) return 0n;
  return field.fieldKind === "scalar" && field.scalar === ScalarType.INT32 ? 0 : "";
}

/**
 * One JSON line → the push message's fields (read from its descriptor, by proto name), or the
 * reason it cannot be sent. Missing required fields are sent empty (NaN for numbers, 0 for
 * times) and refused by the service with its own reason (invalid_symbol, non_finite_value,
 * invalid_time, …); a missing optional field is left unset.
 */
export function rowFromJsonLine(
  dataset: PushedDataset,
  line: string,
): { ok: true; init: Record<string, unknown> } | { ok: false; reason: string; key: string } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, reason: "invalid_json", key: "" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, reason: "invalid_json", key: "" };
  const object = value as Record<string, unknown>;
  const keyValue = object[KEY_FIELD[dataset]];
  const key = typeof keyValue === "string" ? keyValue.slice(0, 64) : "";
  const schema = PUSH[dataset].input;
  for (const name of Object.keys(object)) {
    if (!schema.fields.some((field) => field.name === name)) return { ok: false, reason: "unknown_field", key };
  }
  const init: Record<string, unknown> = {};
  for (const field of schema.fields) {
    const v = object[field.name];
    if (v === undefined || v === null) {
      if (!field.proto.proto3Optional) init[field.localName] = emptyValue(field);
      continue;
    }
    const read = readValue(field, v);
    if (!read.ok) return { ok: false, reason: "wrong_type", key };
    init[field.localName] = read.value;
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
export async function importDataset(
  transport: Transport,
  dataset: PushedDataset,
  file: string,
): Promise<DataImportResult> {
  const raw = createReadStream(file);
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  // A read error (missing file, corrupt gzip) must end the stream with an error, not hang it.
  raw.on("error", (err) => input.destroy(err));
  const lines = createInterface({ input, crlfDelay: Infinity });
  const local = emptyPushSummary();
  /** For each row sent, its row index and line number in the file. */
  const sent: { index: number; line: number }[] = [];
  const lineOf = new Map<number, number>();
  const method = PUSH[dataset];
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
      yield create(method.input, row.init as never);
    }
  }
  const client = createClient(DataIngestService, transport);
  const res = await client[method.localName as keyof typeof client](requests() as never);
  return merge(dataset, file, local, res, sent, lineOf);
}

function merge(
  dataset: PushedDataset,
  file: string,
  local: PushSummary,
  res: {
    accepted: bigint;
    rejected: bigint;
    duplicates: bigint;
    rejections: { index: bigint; key: string; reason: string }[];
    reasons: { [reason: string]: bigint };
  },
  sent: { index: number; line: number }[],
  lineOf: Map<number, number>,
): DataImportResult {
  // The service numbers the rows it received; map them back to the file's rows.
  const remote = res.rejections.map((r) => ({
    index: sent[Number(r.index)]?.index ?? -1,
    key: r.key,
    reason: r.reason,
  }));
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
