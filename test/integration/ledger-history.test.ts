/**
 * The account page's ledger reads over a seeded ledger (rows at chosen times, around MYT
 * midnight too): calls per MYT day, the paged ledger with a day's charges on one line, the full
 * ledger for the CSV (and the CSV itself, parsed back), and "last used" written in batches.
 * Every expectation is computed here from the seeded rows, not by the code under test.
 */

import { parse } from "csv-parse/sync";
import { sql } from "drizzle-orm";
import { Counter, Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../src/accounts/accounts.ts";
import { hashApiKey } from "../../src/accounts/api-key.ts";
import { activeKeyTimes, KeyLastUsed } from "../../src/accounts/key-last-used.ts";
import { allLedgerRows, dailyUsage, type LedgerLine, ledgerPage } from "../../src/billing/ledger-history.ts";
import { mytDay } from "../../src/clock.ts";
import { loadConfig } from "../../src/config.ts";
import { LEDGER_CSV_COLUMNS, ledgerCsvStream } from "../../src/web/ledger-csv.ts";
import { createTestDb, type TestDb } from "../support/test-db.ts";

const limits = loadConfig({}).limits;
const NOW = Date.parse("2026-11-24T06:00:00Z"); // 14:00 MYT on 24 Nov
const HOUR = 3600_000;
const DAY = 24 * HOUR;

interface Seeded {
  id: number;
  kind: string;
  at: number;
  delta: number;
  reason: string | null;
}

describe("ledger history: per-day usage, the paged ledger, the CSV, last used", () => {
  let db: TestDb;
  let ana: number;
  let bob: number;
  let anaKey: string;
  const seeded: Seeded[] = [];

  async function insert(
    accountId: number,
    kind: string,
    at: number,
    delta: number,
    reason: string | null = null,
  ): Promise<void> {
    const [row] = await db.handle.rows<{ id: number | string }>(sql`
      INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason,
      created_at)
      VALUES (${accountId}, ${kind}, ${delta}, 0, 5000, 0, ${reason}, ${new Date(at).toISOString()}::timestamptz)
      RETURNING id`);
    if (accountId === ana) seeded.push({ id: Number(row!.id), kind, at, delta, reason });
  }

  beforeAll(async () => {
    db = await createTestDb();
    const a = await createAccount(
      db.handle,
      { email: "ana@example.test", plan: "node", subscriptionUntil: new Date(NOW + 30 * DAY) },
      limits,
      NOW - 40 * DAY,
    );
    ana = a.summary.accountId;
    anaKey = a.apiKey;
    bob = (
      await createAccount(
        db.handle,
        { email: "bob@example.test", plan: "node", subscriptionUntil: new Date(NOW + 30 * DAY) },
        limits,
        NOW - 40 * DAY,
      )
    ).summary.accountId;
    // The grant createAccount wrote is Ana's first row.
    const [grant] = await db.handle.rows<{
      id: number | string;
      at: number | string;
      delta: number | string;
      reason: string | null;
    }>(
      sql`SELECT id, floor(extract(epoch FROM created_at) * 1000)::float8 AS at, grant_delta AS delta, reason
        FROM ledger_entries WHERE account_id = ${ana}`,
    );
    seeded.push({
      id: Number(grant!.id),
      kind: "grant",
      at: Number(grant!.at),
      delta: Number(grant!.delta),
      reason: grant!.reason,
    });
    // 40 days back to today: some days busy, some empty, in time order (ids follow time).
    for (let d = 40; d >= 0; d--) {
      const dayStart = Date.parse(`${mytDay(NOW - d * DAY)}T00:00:00+08:00`);
      const calls = d % 3 === 0 ? 0 : (d * 7) % 11;
      for (let i = 0; i < calls; i++) await insert(ana, "charge", dayStart + HOUR + i * 60_000, -1);
      if (d === 12) await insert(ana, "pack", dayStart + 2 * HOUR + 30 * 60_000, 5000, 'Stripe "pack", 5,000 Tokens');
      if (d === 5) await insert(ana, "adjustment", dayStart + 20 * HOUR, 3, "=refund\nthree calls");
      if (d % 10 === 1) await insert(bob, "charge", dayStart + 3 * HOUR, -1);
    }
    // Around midnight MYT: one second before belongs to the day before, midnight itself to the day after.
    const midnight = Date.parse(`${mytDay(NOW - 2 * DAY)}T00:00:00+08:00`);
    await insert(ana, "charge", midnight - 1000, -1);
    await insert(ana, "charge", midnight, -1);
    seeded.sort((x, y) => x.id - y.id);
  });

  afterAll(async () => {
    await db?.drop();
  });

  /** Ana's charges per MYT day, from the seeded rows. */
  function expectedCallsByDay(): Map<string, number> {
    const byDay = new Map<string, number>();
    for (const r of seeded.filter((s) => s.kind === "charge"))
      byDay.set(mytDay(r.at), (byDay.get(mytDay(r.at)) ?? 0) + 1);
    return byDay;
  }

  it("counts calls and Tokens per MYT day for the last 30 days, zero days included", async () => {
    const usage = await dailyUsage(db.handle, ana, NOW);
    expect(usage).toHaveLength(30);
    expect(usage[29]!.day).toBe("2026-11-24");
    expect(usage[0]!.day).toBe("2026-10-26");
    const byDay = expectedCallsByDay();
    for (const d of usage) {
      expect(d.calls, d.day).toBe(byDay.get(d.day) ?? 0);
      expect(d.tokens, d.day).toBe(d.calls);
    }
    expect(usage.some((d) => d.calls === 0)).toBe(true);
    expect(usage.reduce((s, d) => s + d.calls, 0)).toBeGreaterThan(50);
    // The charge one second before midnight MYT is in the day before.
    const twoDaysAgo = usage.find((d) => d.day === mytDay(NOW - 2 * DAY))!;
    const threeDaysAgo = usage.find((d) => d.day === mytDay(NOW - 3 * DAY))!;
    expect(twoDaysAgo.calls).toBe(byDay.get(twoDaysAgo.day));
    expect(threeDaysAgo.calls).toBe(byDay.get(threeDaysAgo.day));
    expect(threeDaysAgo.calls).toBeGreaterThan(0);
  });

  it(
    "pages the ledger newest first: every grant, pack and " + "adjustment once, each day's charges as one line",
    async () => {
      const seen: LedgerLine[] = [];
      let before: number | null = null;
      let pages = 0;
      do {
        const page = await ledgerPage(db.handle, ana, before, 7);
        expect(page.lines.length).toBeLessThanOrEqual(7);
        seen.push(...page.lines);
        before = page.older;
        pages++;
      } while (before !== null && pages < 100);
      expect(pages).toBeGreaterThan(3);
      const ids = seen.map((l) => l.id);
      expect(ids).toEqual([...ids].sort((x, y) => y - x));
      expect(new Set(ids).size).toBe(ids.length);
      const entries = seen.filter((l) => l.type === "entry");
      expect(entries.map((e) => e.id).sort((x, y) => x - y)).toEqual(
        seeded.filter((s) => s.kind !== "charge").map((s) => s.id),
      );
      const pack = entries.find((e) => e.kind === "pack")!;
      expect(pack).toMatchObject({ tokens: 5000, reason: 'Stripe "pack", 5,000 Tokens' });
      const chargeLines = seen.filter((l) => l.type === "charges");
      expect(new Map(chargeLines.map((l) => [l.day, l.calls]))).toEqual(expectedCallsByDay());
      for (const line of chargeLines) {
        expect(line.tokens).toBe(-line.calls);
        // The line stands where the day's last charge stands.
        expect(line.id).toBe(
          Math.max(...seeded.filter((s) => s.kind === "charge" && mytDay(s.at) === line.day).map((s) => s.id)),
        );
      }
    },
  );

  it("never shows another account's rows, whatever `before` says", async () => {
    const [bobsRow] = await db.handle.rows<{ id: number | string }>(
      sql`SELECT max(id) AS id FROM ledger_entries WHERE account_id = ${bob}`,
    );
    const page = await ledgerPage(db.handle, ana, Number(bobsRow!.id), 500);
    const anaIds = new Set(seeded.map((s) => s.id));
    for (const line of page.lines.filter((l) => l.type === "entry")) expect(anaIds.has(line.id)).toBe(true);
    const beyond = await ledgerPage(db.handle, ana, 1, 10);
    expect(beyond).toEqual({ lines: [], older: null });
  });

  it("reads the full ledger in pages, and the CSV lists every row once with proper quoting", async () => {
    const pages: number[] = [];
    const rows = [];
    for await (const page of allLedgerRows(db.handle, ana, 9)) {
      pages.push(page.length);
      rows.push(...page);
    }
    expect(pages.length).toBe(Math.ceil(seeded.length / 9));
    expect(rows.map((r) => r.id)).toEqual(seeded.map((s) => s.id));

    const text = await new Response(ledgerCsvStream(allLedgerRows(db.handle, ana, 9))).text();
    expect(text.endsWith("\r\n")).toBe(true);
    const records = parse(text, { columns: true, skip_empty_lines: false }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual([...LEDGER_CSV_COLUMNS]);
    expect(records).toHaveLength(seeded.length);
    records.forEach((r, i) => {
      const s = seeded[i]!;
      expect(Number(r.id)).toBe(s.id);
      expect(r.time_utc).toBe(new Date(s.at).toISOString());
      expect(r.day_myt).toBe(mytDay(s.at));
      expect(r.kind).toBe(s.kind);
      expect(Number(r.tokens)).toBe(s.delta);
      // A note that starts like a formula gets a leading apostrophe; everything else is verbatim.
      expect(r.note).toBe(s.reason === null ? "" : s.reason.startsWith("=") ? `'${s.reason}` : s.reason);
    });
    expect(text).toContain('"Stripe ""pack"", 5,000 Tokens"');
  });

  it("writes last-used times in one batched statement per window, never per call", async () => {
    const registry = new Registry();
    const flushes = new Counter({ name: "flushes", help: "h", registers: [registry] });
    const rowsWritten = new Counter({ name: "rows", help: "h", registers: [registry] });
    const keyUse = new KeyLastUsed(db.handle, { windowMs: 3_600_000, flushes, rowsWritten });
    expect((await activeKeyTimes(db.handle, ana))!.lastUsedAt).toBeNull();
    const anaHash = hashApiKey(anaKey);
    for (let i = 0; i < 50; i++) keyUse.touch(anaHash, NOW + i * 1000);
    keyUse.touch(anaHash, NOW); // an older time arriving late does not win
    keyUse.touch(hashApiKey("sig_live_not_a_stored_key"), NOW);
    expect((await registry.getSingleMetric("flushes")!.get()).values[0]!.value).toBe(0);
    await keyUse.flush();
    expect((await flushes.get()).values[0]!.value).toBe(1);
    expect((await rowsWritten.get()).values[0]!.value).toBe(2);
    expect((await activeKeyTimes(db.handle, ana))!.lastUsedAt!.getTime()).toBe(NOW + 49_000);
    // Nothing noted since: no statement at all.
    await keyUse.flush();
    expect((await flushes.get()).values[0]!.value).toBe(1);
    // A time older than the stored one never moves it back; close() writes what is left.
    keyUse.touch(anaHash, NOW - DAY);
    await keyUse.close();
    expect((await flushes.get()).values[0]!.value).toBe(2);
    expect((await activeKeyTimes(db.handle, ana))!.lastUsedAt!.getTime()).toBe(NOW + 49_000);
  });
});
