/**
 * Reading candle files for `signals candles import`: CSV with a header naming the columns
 * (`open_time,open,high,low,close,volume,…`, ISO times with an offset or epoch ms), or the
 * headerless Binance kline layout (`open_time_ms,open,high,low,close,volume,close_time_ms,…`).
 * `.gz` files are decompressed on the fly. Every row becomes a closed candle update; a row
 * that cannot be parsed becomes an update that validation rejects with a reason.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";
import type { CandleUpdate } from "./validate.ts";

const REQUIRED = ["open_time", "open", "high", "low", "close"] as const;

/** Parses an open time: epoch ms digits, or an ISO 8601 date-time that carries its offset. */
export function parseOpenTime(text: string): number {
  const t = text.trim();
  if (/^\d{10,14}$/.test(t)) return Number(t);
  // "2020-10-23 11:00:00+03:00": ISO with a space; an offset (or Z) is required, local time is ambiguous.
  if (!/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(t)) return NaN;
  return Date.parse(t.replace(" ", "T"));
}

function toNumber(text: string | undefined): number {
  if (text === undefined || text.trim() === "") return NaN;
  return Number(text);
}

/** Reads the file line by line and yields one closed update per data row. */
export async function* readCandleFile(
  file: string,
  symbol: string,
  tf: string,
  onBytes?: (n: number) => void,
): AsyncGenerator<CandleUpdate> {
  const raw = createReadStream(file);
  if (onBytes) raw.on("data", (chunk) => onBytes(chunk.length));
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  const lines = createInterface({ input, crlfDelay: Infinity });
  let columns: Record<string, number> | null = null;
  let first = true;
  for await (const line of lines) {
    if (line.trim() === "") continue;
    const cells = line.split(",");
    if (first) {
      first = false;
      const names = cells.map((c) => c.trim().toLowerCase());
      if (REQUIRED.every((name) => names.includes(name))) {
        columns = Object.fromEntries(names.map((name, i) => [name, i]));
        continue;
      }
      if (!/^\d/.test(cells[0]?.trim() ?? ""))
        throw new Error(
          `${file}: the first line is neither a header with ${REQUIRED.join(",")} nor a Binance kline row`,
        );
    }
    const at = (name: string, fallback: number) => cells[columns ? (columns[name] ?? -1) : fallback];
    yield {
      symbol,
      tf,
      openTime: parseOpenTime(at("open_time", 0) ?? ""),
      open: toNumber(at("open", 1)),
      high: toNumber(at("high", 2)),
      low: toNumber(at("low", 3)),
      close: toNumber(at("close", 4)),
      volume: columns && columns.volume === undefined ? 0 : toNumber(at("volume", 5)),
      closed: true,
    };
  }
}
