/**
 * The live record end to end on real BTC and ETH 1h candles: history imported without alerts,
 * then two weeks pushed candle by candle as they close (live). /track-record shows only what was
 * issued live; its figures (the same for everyone: a public page shows no signal still in force)
 * equal a replay of the stored live events up to that cut, written here from the method's words
 * (next-open fills, fee and slippage by the research's accounting); the confidence section covers both
 * coins; the signal log downloads only for a signed-in member, verifies, and its last line is the
 * page's newest chain head.
 */

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { readCandleFile } from "../../src/market/csv-candles.ts";
import { verifyChainLog } from "../../src/market/event-chain.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { computeLiveRecord, loadLiveInputs } from "../../src/track-record/live-record-data.ts";
import { formatPercent } from "../../src/web/format.ts";
import { REAL_CANDLES_DIR, realCandlesAvailable } from "../support/real-candles.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { WebClient } from "../support/web-client.ts";

const H = 3_600_000;
const HISTORY = 1200;
const LIVE_HOURS = 14 * 24;
const FIELDS = ["trades", "winRate", "avgResult", "total", "buyHold", "drawdown"] as const;

function row(body: string, series: string): Record<(typeof FIELDS)[number], string> | null {
  const match = new RegExp(`<tr data-series="${series}">([\\s\\S]*?)</tr>`).exec(body);
  if (match === null) return null;
  return Object.fromEntries(
    FIELDS.map((f) => [f, new RegExp(`data-field="${f}"[^>]*>([^<]*)<`).exec(match[1]!)![1]!]),
  ) as Record<(typeof FIELDS)[number], string>;
}

/**
 * The live trades of one series replayed from the stored rows, from the method's words: each
 * live LONG/SHORT (strong ones too) opens a trade when no position is held; it ends at the first
 * later close through its defense, or the next event that is opposite or NONE; fills at the open
 * of the candle after the signal's and after the exit's close; the growth after 0.1% fee and
 * 0.03% slippage per side. Returns the growths of the closed trades.
 */
function replay(
  events: Array<{ signal: string; price: number; defense: number | null; t: number; live: boolean }>,
  candles: Array<{ t: number; open: number; close: number }>,
): number[] {
  const f = 0.001;
  const s = 0.0003;
  const dir = (signal: string) => (signal.endsWith("LONG") ? 1 : signal.endsWith("SHORT") ? -1 : 0);
  const since = events.find((e) => e.live)!.t;
  const cs = candles.filter((c) => c.t >= since);
  const idx = (t: number) => cs.findIndex((c) => c.t === t);
  const growths: number[] = [];
  let heldUntil = -Infinity;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const d = dir(e.signal);
    if (!e.live || d === 0 || e.t < since || e.t < heldUntil) continue;
    const next = events.slice(i + 1).find((x) => dir(x.signal) !== d);
    let exitT: number | null = next?.t ?? null;
    for (const c of cs) {
      if (c.t <= e.t || (exitT !== null && c.t > exitT)) continue;
      if (e.defense !== null && (d === 1 ? c.close <= e.defense : c.close >= e.defense)) {
        exitT = c.t;
        break;
      }
    }
    if (exitT === null) break; // still open
    const entry = cs[idx(e.t) + 1];
    const exit = cs[idx(exitT) + 1];
    if (entry === undefined || exit === undefined) break;
    const E = entry.open * (1 + d * s);
    const X = exit.open * (1 - d * s);
    growths.push(d === 1 ? (1 - f) ** 2 * (X / E) : Math.max(0, (1 - f) * (2 - (1 + f) * (X / E))));
    heldUntil = exitT;
  }
  return growths;
}

describe.runIf(realCandlesAvailable)("the live record on /track-record", () => {
  let server: TestServer;
  let member: WebClient;

  beforeAll(async () => {
    const coins: CandleUpdate[][] = [];
    for (const coin of ["BTC", "ETH"]) {
      const all: CandleUpdate[] = [];
      for await (const c of readCandleFile(`${REAL_CANDLES_DIR}${coin}USDT_1h.csv.gz`, coin, "1h")) {
        all.push(c);
        if (all.length >= HISTORY + LIVE_HOURS) break;
      }
      coins.push(all);
    }
    const clock = createTestClock(coins[0]![HISTORY - 1]!.openTime + H + 60_000);
    server = await startTestServer({ feed: true, clock });
    for (const all of coins)
      expect((await server.feed!.ingest(all.slice(0, HISTORY), { alerts: false })).rejected).toBe(0);
    // Then hour by hour, each candle pushed a minute after it closed: its signals are live.
    for (let i = HISTORY; i < HISTORY + LIVE_HOURS; i++) {
      clock.set(coins[0]![i]!.openTime + H + 60_000);
      expect((await server.feed!.ingest(coins.map((c) => c[i]!))).rejected).toBe(0);
    }
    const account = await server.account({ email: "lina.live@example.test" });
    await setMemberPassword(
      server.db.handle,
      account.accountId,
      "a long and correct password",
      server.config.passwordHashCost,
    );
    member = new WebClient(server.baseUrl);
    expect((await member.signIn("lina.live@example.test", "a long and correct password")).status).toBe(303);
  }, 300_000);

  afterAll(async () => {
    await server?.close();
  });

  it(
    "shows everyone the figures of a replay of the stored live " +
      "events (ended ones), and none of the imported history",
    async () => {
      const page = await member.get("/track-record");
      expect(page.status).toBe(200);
      let compared = 0;
      for (const coin of ["BTC", "ETH"]) {
        for (const tf of ["1h", "4h"]) {
          const events = (
            await server.db.handle.rows<{
              signal: string;
              price: number;
              defense: number | null;
              t: string | number;
              live: boolean;
            }>(sql`
          SELECT signal, price, defense, candle_open_time AS t, live FROM signal_events WHERE symbol = ${coin}
          AND tf = ${tf} ORDER BY candle_open_time,
          seq`)
          ).map((e) => ({ ...e, t: Number(e.t), live: e.live === true }));
          const candles = (
            await server.db.handle.rows<{ t: string | number; open: number; close: number }>(sql`
          SELECT open_time AS t, open, close FROM candles WHERE symbol = ${coin} AND tf = ${tf} AND closed
          ORDER BY open_time`)
          ).map((c) => ({ ...c, t: Number(c.t) }));
          expect(
            events.some((e) => !e.live),
            `${coin} ${tf} has imported events`,
          ).toBe(true);
          // The public page stands just before the signal in force 24 hours ago began (the entitlement rule).
          const tfMs = tf === "1h" ? H : 4 * H;
          const inForce = events
            .map((e) => e.t + tfMs)
            .filter((t) => t <= server.clock() - 24 * H)
            .at(-1);
          const until = inForce === undefined ? server.clock() - 24 * H : inForce - 1;
          const shown = row(page.body, `${coin}/${tf}`);
          if (!events.some((e) => e.live && e.t + tfMs <= until)) {
            expect(shown, `${coin} ${tf}`).toBeNull();
            continue;
          }
          const growths = replay(
            events.filter((e) => e.t + tfMs <= until),
            candles.filter((c) => c.t + tfMs <= until),
          );
          const results = growths.map((g) => (g - 1) * 100);
          expect(shown, `${coin} ${tf}`).not.toBeNull();
          expect(shown!.trades, `${coin} ${tf}`).toBe(String(growths.length));
          if (growths.length === 0) continue;
          expect(shown!.total, `${coin} ${tf}`).toBe(formatPercent((growths.reduce((a, b) => a * b, 1) - 1) * 100));
          expect(shown!.avgResult, `${coin} ${tf}`).toBe(
            formatPercent(results.reduce((a, b) => a + b, 0) / results.length),
          );
          expect(shown!.winRate, `${coin} ${tf}`).toBe(
            `${((results.filter((r) => r > 0).length * 100) / results.length).toFixed(1)}%`,
          );
          compared += growths.length;
        }
      }
      // The premise: live trades exist on both coins.
      expect(compared).toBeGreaterThan(10);
    },
  );

  it(
    "shows the record cut 24 hours back to anyone, signed in " +
      "or not, with the confidence per timeframe and the method",
    async () => {
      const body = await (await fetch(`${server.baseUrl}/track-record`)).text();
      const expected = computeLiveRecord(await loadLiveInputs(server.db.handle), server.clock());
      for (const s of expected.series) {
        const shown = row(body, `${s.symbol}/${s.tf}`);
        if (s.live.liveSince === null) {
          expect(shown, `${s.symbol} ${s.tf} has no ended live signal yet`).toBeNull();
          continue;
        }
        expect(shown, `${s.symbol} ${s.tf}`).not.toBeNull();
        expect(shown!.trades).toBe(String(s.live.trades.length));
        expect(shown!.total).toBe(formatPercent(s.totalPct));
      }
      const full = computeLiveRecord(await loadLiveInputs(server.db.handle), null);
      expect(expected.series.reduce((n, s) => n + s.live.trades.length, 0)).toBeLessThanOrEqual(
        full.series.reduce((n, s) => n + s.live.trades.length, 0),
      );
      expect(body).toMatch(/<tr data-tf="1h">[\s\S]*?data-field="coins">2</);
      expect(body).toMatch(/data-field="dsr">[0-9.]+ <span class="muted">\(N = 47\)/);
      for (const part of ["long", "short", "up", "down"]) expect(body).toContain(`data-split="${part}"`);
      expect(body).toContain("Bailey &amp; López de Prado");
      expect(body).toContain("Wilson");
    },
  );

  it(
    "lets only a signed-in member download the signal log; " + "it verifies and ends at the page's newest chain head",
    async () => {
      const anonymous = await fetch(`${server.baseUrl}/track-record/log.jsonl`, { redirect: "manual" });
      expect(anonymous.status).toBe(303);
      expect(anonymous.headers.get("location")).toBe(`/signin?next=${encodeURIComponent("/track-record/log.jsonl")}`);
      const download = await member.get("/track-record/log.jsonl");
      expect(download.status).toBe(200);
      const verdict = verifyChainLog(download.body);
      const [{ n }] = (await server.db.handle.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM signal_events WHERE live`,
      )) as [{ n: number }];
      expect(verdict).toMatchObject({ ok: true, events: n });
      expect(n).toBeGreaterThan(10);
      const page = (await member.get("/track-record")).body;
      const heads = /<table id="chain-heads"[\s\S]*?<\/table>/.exec(page)![0];
      const newest = /<code>([0-9a-f]{64})<\/code>/.exec(heads)![1];
      expect(verdict.ok && verdict.head).toBe(newest);
      expect(page).toContain('id="log-download"');
      expect(await (await fetch(`${server.baseUrl}/track-record`)).text()).not.toContain('id="log-download"');
    },
  );
});
