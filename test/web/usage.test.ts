/**
 * The account page's usage over time and key facts, in real headless Chromium against a real
 * server: the 30-day chart's bars and table equal the ledger (grouped by MYT day here, from the
 * database rows), a day's charges are one ledger line and grants/packs stay their own, the
 * ledger pages (and a bad page value is a 400 page), the CSV download is the full ledger row for
 * row, and the key card's "last used" moves after calls while the calls cost no write each
 * (the server's own last-used metrics, read from /metrics). Also fits a 390 px phone.
 */
import path from "node:path";
import { parse } from "csv-parse/sync";
import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { mytDay } from "../../src/clock.ts";
import { formatMyt } from "../../src/web/format.ts";
import { chromiumAvailable, launchChromium, RESULTS_DIR } from "../support/browser.ts";
import { awayFromMytMidnight, waitFor } from "../support/reliability.ts";
import { usingPostgres } from "../support/test-db.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

declare const document: any;
declare const getComputedStyle: any;

const EMAIL = "uma.usage@example.test";
const PASSWORD = "a long and correct password";
const DB_SUFFIX = usingPostgres ? "postgres" : "pglite";
const DAY = 86_400_000;
/** How long this file runs at most, kept clear of 00:00 MYT (the day the charges and the page count). */
const FILE_SPAN_MS = 5 * 60_000;
/** The server's coalescing window for "last used" in this suite. */
const WINDOW_MS = 1500;

interface DbRow {
  id: number;
  kind: string;
  at: number;
  tokens: number;
  reason: string | null;
}

describe.skipIf(!chromiumAvailable)("usage over time and key facts on the account page", () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let apiKey: string;
  let accountId: number;

  /** The member's ledger as stored, oldest first. */
  async function ledgerRows(): Promise<DbRow[]> {
    const rows = await server.db.handle.rows<{
      id: string | number;
      kind: string;
      at: string | number;
      tokens: string | number;
      reason: string | null;
    }>(sql`
      SELECT id, kind, floor(extract(epoch FROM created_at) * 1000)::float8 AS at, grant_delta + pack_delta AS tokens,
      reason
        FROM ledger_entries WHERE account_id = ${accountId} ORDER BY id`);
    return rows.map((r) => ({
      id: Number(r.id),
      kind: r.kind,
      at: Number(r.at),
      tokens: Number(r.tokens),
      reason: r.reason,
    }));
  }

  /** Charged calls per MYT day, grouped here from the stored rows. */
  async function callsByDay(): Promise<Map<string, number>> {
    const byDay = new Map<string, number>();
    for (const r of await ledgerRows())
      if (r.kind === "charge") byDay.set(mytDay(r.at), (byDay.get(mytDay(r.at)) ?? 0) + 1);
    return byDay;
  }

  async function callRest(): Promise<number> {
    const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC&tf=4h`, { headers: { "x-api-key": apiKey } });
    await res.arrayBuffer();
    return res.status;
  }

  /** The last-used counters from the internal /metrics. */
  async function lastUsedMetrics(): Promise<{ flushes: number; rows: number }> {
    const text = await (
      await fetch(`${server.internalUrl}/metrics`, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })
    ).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)![1]);
    return {
      flushes: value("signals_api_key_last_used_flushes_total"),
      rows: value("signals_api_key_last_used_rows_total"),
    };
  }

  beforeAll(async () => {
    // Charges carry the database's time; the page's "today" is the server clock: keep them on one MYT day.
    // The file ends within seconds, so five minutes covers it beside busy loops; the hook's own
    // timeout below leaves room for that wait on top of the default.
    await awayFromMytMidnight(FILE_SPAN_MS);
    server = await startTestServer({
      clock: createTestClock(Date.now()),
      env: { KEY_LAST_USED_FLUSH_MS: String(WINDOW_MS) },
    });
    const account = await server.account({ email: EMAIL });
    ({ apiKey, accountId } = account);
    await setMemberPassword(server.db.handle, accountId, PASSWORD, server.config.passwordHashCost);
    // Past usage: charges on most of the last 40 days, a Token pack, and another member's calls.
    const other = await server.account({ email: "olga.other@example.test" });
    const now = server.clock();
    for (let d = 40; d >= 1; d--) {
      const dayStart = Date.parse(`${mytDay(now - d * DAY)}T00:00:00+08:00`);
      const calls = d % 4 === 0 ? 0 : (d * 13) % 17;
      if (calls > 0) {
        await server.db.handle.rows(sql`
          INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, created_at)
          SELECT ${accountId}, 'charge', -1, 0, 9000, 0, ${new Date(dayStart + 3_600_000).toISOString()}::timestamptz +
          g * interval '1 minute'
            FROM generate_series(0, ${calls - 1}) AS g`);
      }
      if (d === 9) {
        await server.db.handle.rows(sql`INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta,
          grant_after, pack_after, reason, created_at)
          VALUES (${accountId}, 'pack', 0, 5000, 9000, 5000, ${'Stripe pack "5,000", paid'},
          ${new Date(dayStart + 5 * 3_600_000).toISOString()}::timestamptz)`);
      }
      if (d % 5 === 0) {
        await server.db.handle.rows(sql`INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta,
          grant_after, pack_after, created_at)
          VALUES (${other.accountId}, 'charge', -1, 0, 9000, 0,
          ${new Date(dayStart + 7_200_000).toISOString()}::timestamptz)`);
      }
    }
    // And three real calls today.
    for (let i = 0; i < 3; i++) expect(await callRest()).toBe(200);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    await page.goto(`${server.baseUrl}/signin`);
    await page.locator("#email").fill(EMAIL);
    await page.locator("#password").fill(PASSWORD);
    await Promise.all([page.waitForURL(`${server.baseUrl}/account`), page.locator("#password").press("Enter")]);
  }, FILE_SPAN_MS + 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("draws 30 days of calls whose bars and table equal the ledger, and today's calls against the cap", async () => {
    const byDay = await callsByDay();
    const bars = await page.$$eval("#usage-chart rect.usage-bar", (rects) =>
      rects.map((r: any) => ({
        day: r.dataset.day as string,
        calls: Number(r.dataset.calls),
        height: r.getBoundingClientRect().height as number,
      })),
    );
    expect(bars).toHaveLength(30);
    const today = mytDay(server.clock());
    expect(bars[29]!.day).toBe(today);
    expect(bars[0]!.day).toBe(mytDay(server.clock() - 29 * DAY));
    for (const bar of bars) expect(bar.calls, bar.day).toBe(byDay.get(bar.day) ?? 0);
    expect(bars[29]!.calls).toBe(3);
    // Drawn to scale: empty days have no bar, the busiest day the tallest one.
    const tallest = Math.max(...bars.map((b) => b.height));
    expect(tallest).toBeGreaterThan(50);
    for (const bar of bars) {
      if (bar.calls === 0) expect(bar.height, bar.day).toBe(0);
      else expect(bar.height / tallest, bar.day).toBeCloseTo(bar.calls / Math.max(...bars.map((b) => b.calls)), 1);
    }
    // The table under the chart says the same, Tokens included (1 per call).
    await page.getByText("Calls and Tokens per day").click();
    const table = await page.$$eval("#usage-days tbody tr", (rows) =>
      rows.map((r: any) => ({
        day: r.dataset.day as string,
        cells: [...r.querySelectorAll("td")].map((td: any) => td.textContent as string),
      })),
    );
    expect(table).toHaveLength(30);
    for (const row of table) {
      expect(Number(row.cells[1]!.replace(/,/g, "")), row.day).toBe(byDay.get(row.day) ?? 0);
      expect(Number(row.cells[2]!.replace(/,/g, "")), row.day).toBe(byDay.get(row.day) ?? 0);
    }
    const total = bars.reduce((s, b) => s + b.calls, 0);
    expect(Number((await page.locator("#calls-30d").textContent())!.replace(/,/g, ""))).toBe(total);
    expect(await page.locator("#calls-today").textContent()).toBe("3");
    expect(await page.locator("#usage-meter").getAttribute("max")).toBe("2000");
    await page.screenshot({ path: path.join(RESULTS_DIR, `account-usage-${DB_SUFFIX}.png`), fullPage: true });
  });

  it(
    "shows each day's charges as one ledger line, grants " + "and packs as their own, and pages through all of it",
    async () => {
      const byDay = await callsByDay();
      const stored = await ledgerRows();
      const seenDays: string[] = [];
      const seenEntries: string[] = [];
      let pages = 0;
      for (;;) {
        pages++;
        const lines = await page.$$eval("#ledger tbody tr", (rows) =>
          rows.map((r: any) => ({
            type: r.className as string,
            cells: [...r.querySelectorAll("td")].map((td: any) => (td.textContent as string).trim()),
          })),
        );
        expect(lines.length).toBeLessThanOrEqual(20);
        for (const line of lines) {
          if (line.type === "charges") {
            const calls = Number(line.cells[1]!.replace(/ API calls?$/, "").replace(/,/g, ""));
            const month = (d: string) =>
              new Date(`${d}T00:00:00Z`).toLocaleString("en-US", { month: "short", timeZone: "UTC" });
            const day = [...byDay.keys()].find(
              (d) => line.cells[0] === `${Number(d.slice(8))} ${month(d)} ${d.slice(0, 4)}`,
            )!;
            expect(day, line.cells[0]).toBeDefined();
            expect(calls, day).toBe(byDay.get(day));
            expect(line.cells[2]).toBe(`\u2212${calls}`);
            expect(line.cells[5]).toBe(`${calls} calls, \u2212${calls} Tokens`);
            seenDays.push(day);
          } else {
            seenEntries.push(line.cells[1]!);
          }
        }
        const older = page.getByRole("link", { name: "Older entries" });
        if ((await older.count()) === 0) break;
        await Promise.all([page.waitForURL(/\?ledger_before=\d+#ledger-h$/), older.click()]);
        await expect(page.getByRole("link", { name: "Newest entries" }).count()).resolves.toBe(1);
      }
      expect(pages).toBeGreaterThan(1);
      expect(seenDays.sort()).toEqual([...byDay.keys()].sort());
      expect(seenEntries.sort()).toEqual(
        stored
          .filter((r) => r.kind !== "charge")
          .map((r) => (r.kind === "pack" ? "Token pack" : "Monthly grant"))
          .sort(),
      );
      await page.getByRole("link", { name: "Newest entries" }).click();
      await page.waitForURL(`${server.baseUrl}/account#ledger-h`);
    },
  );

  it("answers a malformed ledger page value with a 400 page, never a 500", async () => {
    for (const bad of ["abc", "0", "-5", "1.5", "", "99999999999999999999", "1e3"]) {
      const res = await page.goto(`${server.baseUrl}/account?ledger_before=${encodeURIComponent(bad)}`);
      expect(res!.status(), bad).toBe(400);
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("No such ledger page");
    }
    // A well-formed value of no line of this member is a page of what lies below it: here, nothing.
    const res = await page.goto(`${server.baseUrl}/account?ledger_before=1`);
    expect(res!.status()).toBe(200);
    expect(await page.locator("#ledger").count()).toBe(0);
  });

  it("downloads the full ledger as CSV, one row per call, equal to the database", async () => {
    await page.goto(`${server.baseUrl}/account`);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: /Download the full ledger/ }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`ledger-${mytDay(server.clock())}.csv`);
    const file = path.join(RESULTS_DIR, `ledger-${DB_SUFFIX}.csv`);
    await download.saveAs(file);
    const text = (await import("node:fs")).readFileSync(file, "utf8");
    const records = parse(text, { columns: true }) as Record<string, string>[];
    const stored = await ledgerRows();
    expect(stored.filter((r) => r.kind === "charge").length).toBeGreaterThan(100);
    expect(records.map((r) => [Number(r.id), r.kind, Number(r.tokens), r.time_utc, r.day_myt, r.note])).toEqual(
      stored.map((s) => [s.id, s.kind, s.tokens, new Date(s.at).toISOString(), mytDay(s.at), s.reason ?? ""]),
    );
    // The response itself: an attachment, not cached; and only for a signed-in member.
    const res = await context.request.get(`${server.baseUrl}/account/ledger.csv`);
    expect(res.headers()["content-disposition"]).toMatch(/^attachment; filename="ledger-\d{4}-\d{2}-\d{2}\.csv"$/);
    expect(res.headers()["content-type"]).toBe("text/csv; charset=utf-8");
    expect(res.headers()["cache-control"]).toBe("no-store");
    const anonymous = await fetch(`${server.baseUrl}/account/ledger.csv`, { redirect: "manual" });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("location")).toBe("/signin?next=%2Faccount%2Fledger.csv");
  });

  it(
    "shows when the key was made and last used; last used moves " +
      "after calls, written once per window, not per call",
    async () => {
      await page.goto(`${server.baseUrl}/account`);
      const [key] = await server.db.handle.rows<{ created: string | number }>(
        sql`SELECT floor(extract(epoch FROM created_at) * 1000)::float8 AS created FROM api_keys
          WHERE account_id = ${accountId} AND revoked_at IS NULL`,
      );
      expect(await page.locator("#key-created").textContent()).toBe(formatMyt(Number(key!.created)));
      // The three calls of beforeAll, written by now (the window is short here).
      const first = formatMyt(server.clock());
      const lastUsedShows = async (time: string) => {
        await page.reload();
        return (await page.locator("#key-last-used").textContent())!.startsWith(time);
      };
      await waitFor(() => lastUsedShows(first), EVENT_WAIT_MS, "the first last-used time", 250);

      // 50 calls, ten minutes later: the time moves, and the calls made no write each.
      server.clock.advance(10 * 60_000);
      const before = await lastUsedMetrics();
      const started = Date.now();
      for (let i = 0; i < 5; i++)
        expect(await Promise.all(Array.from({ length: 10 }, callRest))).toEqual(Array(10).fill(200));
      const callsMs = Date.now() - started;
      const later = formatMyt(server.clock());
      expect(later).not.toBe(first);
      await waitFor(() => lastUsedShows(later), EVENT_WAIT_MS, "the moved last-used time", 250);
      const after = await lastUsedMetrics();
      // One row write per window at most: the 50 calls span at most this many windows.
      const windows = Math.ceil(callsMs / WINDOW_MS) + 1;
      expect(after.rows - before.rows).toBeGreaterThanOrEqual(1);
      expect(after.rows - before.rows).toBeLessThanOrEqual(windows);
      expect(after.flushes - before.flushes).toBeLessThanOrEqual(windows);
      // Fewer windows than calls, or a write per call would pass too (however long the calls took).
      expect(windows, `the 50 calls took ${callsMs} ms`).toBeLessThan(50);
    },
  );

  it("fits a 390 px phone: no sideways scroll on the account page or a later ledger page", async () => {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      storageState: await context.storageState(),
    });
    const p = await phone.newPage();
    await p.goto(`${server.baseUrl}/account`);
    const older = await p.getByRole("link", { name: "Older entries" }).getAttribute("href");
    for (const url of ["/account", older!]) {
      expect((await p.goto(`${server.baseUrl}${url}`))!.status(), url).toBe(200);
      expect(await p.locator("#usage-chart rect").count()).toBe(30);
      expect(await p.evaluate(() => document.documentElement.scrollWidth), url).toBeLessThanOrEqual(390);
      const scrollers = await p.$$eval("body *", (elements) =>
        elements
          .filter(
            (e: any) => e.scrollWidth > e.clientWidth + 1 && ["auto", "scroll"].includes(getComputedStyle(e).overflowX),
          )
          .map((e: any) => e.id || e.className || e.tagName),
      );
      expect(scrollers, url).toEqual([]);
      const chartWidth = await p.$eval("#usage-chart", (svg: any) => svg.getBoundingClientRect().width as number);
      expect(chartWidth).toBeGreaterThan(250);
      expect(chartWidth).toBeLessThanOrEqual(390);
    }
    await p.goto(`${server.baseUrl}/account`);
    await p.screenshot({ path: path.join(RESULTS_DIR, `phone-account-usage-${DB_SUFFIX}.png`), fullPage: true });
    await phone.close();
  });
});
