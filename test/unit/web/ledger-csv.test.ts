/**
 * The ledger CSV's quoting (parsed back with csv-parse) and what a read failing mid-download does.
 */
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import type { LedgerRow } from "../../../src/billing/ledger-history.ts";
import { csvField, LEDGER_CSV_COLUMNS, ledgerCsvStream } from "../../../src/web/ledger-csv.ts";

const row = (id: number, reason: string | null): LedgerRow => ({
  id,
  at: new Date(Date.parse("2026-11-23T16:00:00Z") + id),
  kind: "adjustment",
  grantDelta: -2,
  packDelta: 1,
  grantAfter: 10,
  packAfter: 5,
  reason,
});

async function* pagesOf(...pages: LedgerRow[][]): AsyncGenerator<LedgerRow[]> {
  for (const page of pages) yield page;
}

describe("ledger CSV", () => {
  it("quotes only what needs it, doubling quotes", () => {
    expect(csvField("plain text")).toBe("plain text");
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField("a,b")).toBe('"a,b"');
    expect(csvField("two\nlines")).toBe('"two\nlines"');
    expect(csvField("cr\r")).toBe('"cr\r"');
  });

  it("round-trips awkward notes through a real CSV parser; formula-like notes are made inert", async () => {
    const notes = [
      'refund, "goodwill"',
      "line one\r\nline two",
      '=HYPERLINK("x")',
      "+1",
      "-1",
      "@SUM(A1)",
      "\tTab",
      "",
      null,
      "ünïcødé ✓",
    ];
    const text = await new Response(
      ledgerCsvStream(
        pagesOf(
          notes.slice(0, 4).map((n, i) => row(i + 1, n)),
          notes.slice(4).map((n, i) => row(i + 5, n)),
        ),
      ),
    ).text();
    const records = parse(text, { columns: true }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual([...LEDGER_CSV_COLUMNS]);
    expect(records.map((r) => r.note)).toEqual(
      notes.map((n) => (n === null ? "" : /^[=+\-@\t]/.test(n) ? `'${n}` : n)),
    );
    expect(records[0]).toMatchObject({
      id: "1",
      time_utc: "2026-11-23T16:00:00.001Z",
      day_myt: "2026-11-24",
      kind: "adjustment",
      tokens: "-1",
      grant_delta: "-2",
      pack_delta: "1",
      grant_after: "10",
      pack_after: "5",
    });
    expect(text.split("\r\n")[0]).toBe(LEDGER_CSV_COLUMNS.join(","));
  });

  it("breaks the download, rather than ending it short, when a read fails mid-way", async () => {
    const seen: unknown[] = [];
    async function* failing(): AsyncGenerator<LedgerRow[]> {
      yield [row(1, null)];
      throw new Error("connection lost");
    }
    await expect(new Response(ledgerCsvStream(failing(), (err) => seen.push(err))).text()).rejects.toThrow(
      "connection lost",
    );
    expect(seen).toHaveLength(1);
  });
});
