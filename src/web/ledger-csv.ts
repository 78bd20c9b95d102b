/**
 * The full ledger as CSV (RFC 4180: comma-separated, CRLF line ends, a field quoted when it holds
 * a quote, comma or line break, quotes doubled), one line per ledger row, oldest first, streamed
 * page by page as the rows are read. Columns: docs/decisions.md.
 */

import type { LedgerRow } from "../billing/ledger-history.ts";
import { mytDay } from "../clock.ts";

export const LEDGER_CSV_COLUMNS = [
  "id",
  "time_utc",
  "day_myt",
  "kind",
  "tokens",
  "grant_delta",
  "pack_delta",
  "grant_after",
  "pack_after",
  "note",
] as const;

/** One CSV field. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/**
 * Free text that a spreadsheet would run as a formula (it starts with = + - @ or a tab/CR) gets a
 * leading apostrophe (OWASP's CSV injection advice). Only the note is free text; numbers keep their sign.
 */
function inertText(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

function csvLine(fields: readonly string[]): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

/** The CSV line of one ledger row. */
export function ledgerCsvLine(row: LedgerRow): string {
  return csvLine([
    String(row.id),
    row.at.toISOString(),
    mytDay(row.at.getTime()),
    row.kind,
    String(row.grantDelta + row.packDelta),
    String(row.grantDelta),
    String(row.packDelta),
    String(row.grantAfter),
    String(row.packAfter),
    inertText(row.reason ?? ""),
  ]);
}

/**
 * The header line, then each page of rows as it arrives; the reader's cancel stops the reading.
 * A read that fails mid-way ends the download broken (the status was sent long before), never
 * silently short: the stream errors, so the connection is reset, and `onError` hears why.
 */
export function ledgerCsvStream(
  pages: AsyncGenerator<LedgerRow[]>,
  onError: (err: unknown) => void = () => {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(csvLine(LEDGER_CSV_COLUMNS)));
    },
    async pull(controller) {
      try {
        const next = await pages.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value.map(ledgerCsvLine).join("")));
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
