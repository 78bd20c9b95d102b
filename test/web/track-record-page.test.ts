/**
 * The public /track-record page and the chart page's backtest over real BTC candles imported
 * through the market feed: /track-record answers with no session and shows no backtest of the
 * imported history (the live record is test/web/live-track-record.test.ts); the chart page
 * counts only signals that ended at least 24 h ago for a member without current access (a
 * fresh computation of that cut), a paid member's the whole history; it is computed once per
 * candle close (a metric counts computations) and a new
 * close shows at the next view; the fee parameter is validated (400, never 500) and changes the
 * numbers as the backtest module says; the chart page warns when the coin's feed is behind or
 * stale and not when it is live.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { readCandleFile } from "../../src/market/csv-candles.ts";
import { TIMEFRAME_MS, type Timeframe } from "../../src/market/timeframes.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import {
  ALLOWED_FEES_PCT,
  type BacktestResult,
  DEFAULT_FEE_PCT,
  runBacktest,
} from "../../src/track-record/backtest.ts";
import { type ChartData, loadChartData } from "../../src/track-record/chart-data.ts";
import { computeTrackRecord } from "../../src/track-record/track-record.ts";
import { backtestFigures } from "../../src/web/chart-page.ts";
import { REAL_CANDLES_DIR, realCandlesAvailable } from "../support/real-candles.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { WebClient } from "../support/web-client.ts";

const H = 3_600_000;
/** Candles held back from the first import, to close later. */
const LATER = 48;
const FIELDS = ["trades", "winRate", "avgResult", "total", "buyHold", "drawdown"] as const;
type Figures = Record<(typeof FIELDS)[number], string>;

/** The backtest figures of a chart page. */
function chartFigures(body: string): Figures {
  const id: Record<(typeof FIELDS)[number], string> = {
    trades: "backtest-trades",
    winRate: "backtest-winrate",
    avgResult: "backtest-avg",
    total: "backtest-total",
    buyHold: "backtest-buyhold",
    drawdown: "backtest-drawdown",
  };
  return Object.fromEntries(
    FIELDS.map((f) => [f, new RegExp(`id="${id[f]}"[^>]*>([^<]*)<`).exec(body)![1]!.trim()]),
  ) as Figures;
}

const expectedFigures = (bt: BacktestResult): Figures => {
  const { trades, winRate, avgResult, total, buyHold, drawdown } = backtestFigures(bt);
  return { trades, winRate, avgResult, total, buyHold, drawdown };
};

/**
 * The backtest everyone without current access sees, computed here from the rule's words: the
 * series as it stood just before the signal that was in force 24 hours before `now`.
 */
function endedBacktest(fresh: ChartData, tf: Timeframe, now: number): BacktestResult {
  const tfMs = TIMEFRAME_MS[tf];
  const horizon = now - 24 * H;
  const inForceAtHorizon = fresh.events
    .map((e) => e.candleOpenTime + tfMs)
    .filter((t) => t <= horizon)
    .at(-1);
  const until = inForceAtHorizon === undefined ? horizon : inForceAtHorizon - 1;
  const events = fresh.events.filter((e) => e.candleOpenTime + tfMs <= until);
  const times: number[] = [];
  const closes: number[] = [];
  for (let i = 0; i < fresh.closes.times.length; i++) {
    if (fresh.closes.times[i]! + tfMs > until) break;
    times.push(fresh.closes.times[i]!);
    closes.push(fresh.closes.closes[i]!);
  }
  const record = computeTrackRecord(
    events,
    times.map((openTime, i) => ({ openTime, close: closes[i]! })),
  );
  return runBacktest(record.trades, { times, closes }, DEFAULT_FEE_PCT);
}

describe.runIf(realCandlesAvailable)("public track record and the chart page's backtest", () => {
  let server: TestServer;
  /** A node member: may call the paid endpoint, so sees every signal. */
  let member: WebClient;
  /** A free sign-up: sees the signals that ended, as /track-record does. */
  let freeMember: WebClient;
  let held: CandleUpdate[] = [];

  /** Computations counted by the metric, per timeframe. */
  async function computations(tf: string): Promise<number> {
    const text = await (await fetch(`${server.internalUrl}/metrics`)).text();
    const match = new RegExp(`signals_track_record_computations_total\\{tf="${tf}"\\} (\\d+)`).exec(text);
    return match ? Number(match[1]) : 0;
  }

  beforeAll(async () => {
    const all: CandleUpdate[] = [];
    for await (const c of readCandleFile(`${REAL_CANDLES_DIR}BTCUSDT_1h.csv.gz`, "BTC", "1h")) all.push(c);
    const last = all[all.length - 1]!;
    // The clock stands just after the last real candle closed, so the full history is live.
    server = await startTestServer({ feed: true, clock: createTestClock(last.openTime + H + 5 * 60_000) });
    held = all.splice(all.length - LATER);
    expect((await server.feed!.ingest(all)).rejected).toBe(0);
    const account = await server.account({ email: "rita.record@example.test" });
    await setMemberPassword(
      server.db.handle,
      account.accountId,
      "a long and correct password",
      server.config.passwordHashCost,
    );
    member = new WebClient(server.baseUrl);
    expect((await member.signIn("rita.record@example.test", "a long and correct password")).status).toBe(303);
    const free = await server.account({ email: "fred.free@example.test", plan: "free" });
    await setMemberPassword(
      server.db.handle,
      free.accountId,
      "a long and correct password",
      server.config.passwordHashCost,
    );
    freeMember = new WebClient(server.baseUrl);
    expect((await freeMember.signIn("fred.free@example.test", "a long and correct password")).status).toBe(303);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it(
    "answers with no session and no Token, stating the live record's costs " +
      "and linking the method on the page; no backtest is mixed in",
    async () => {
      const res = await fetch(`${server.baseUrl}/track-record`);
      expect(res.status).toBe(200);
      const body = await res.text();
      expect(body).toContain(`<strong id="stated-costs">0.1% fee and 0.03% slippage per side, no funding`);
      expect(body).toContain(`<a href="#method">`);
      expect(body).toContain(`id="method"`);
      // Imported history issued no live signal: the backtest's hundreds of trades are not on the public page.
      for (const tf of ["1h", "4h", "1d"]) {
        const row = /<tr data-series="BTC\/(?:1h|4h|1d)">([\s\S]*?)<\/tr>/.exec(body);
        if (row !== null)
          expect(Number(/data-field="trades"[^>]*>([^<]*)</.exec(row[1]!)![1]!.replace(/,/g, "")), tf).toBeLessThan(3);
      }
      // The member chart pages stay behind sign-in.
      const chart = await fetch(`${server.baseUrl}/charts/BTC?tf=1h`, { redirect: "manual" });
      expect(chart.status).toBe(303);
      expect(chart.headers.get("location")).toMatch(/^\/signin/);
      // After signing in the member comes back at the fee they asked for.
      const atFee = await fetch(`${server.baseUrl}/charts/BTC?tf=1h&fee=0.2`, { redirect: "manual" });
      expect(atFee.headers.get("location")).toBe(`/signin?next=${encodeURIComponent("/charts/BTC?tf=1h&fee=0.2")}`);
    },
  );

  it(
    "the chart page's backtest counts the signals that ended at least 24 h " +
      "ago for a member without current access; a paid member's has them all",
    async () => {
      for (const tf of ["1h", "4h", "1d"] as const) {
        const fresh = (await loadChartData(server.db.handle, "BTC", tf))!;
        const ended = expectedFigures(endedBacktest(fresh, tf, server.clock()));
        const freePage = await freeMember.get(`/charts/BTC?tf=${tf}`);
        expect(freePage.status).toBe(200);
        expect(chartFigures(freePage.body), tf).toEqual(ended);
        const page = await member.get(`/charts/BTC?tf=${tf}`);
        expect(page.status).toBe(200);
        expect(chartFigures(page.body), tf).toEqual(
          expectedFigures(runBacktest(fresh.record.trades, fresh.closes, DEFAULT_FEE_PCT)),
        );
      }
      // The cut is real: on 1h the paid member's page counts trades the free member's does not yet.
      expect(
        Number(chartFigures((await member.get("/charts/BTC?tf=1h")).body).trades.replace(/,/g, "")),
      ).toBeGreaterThan(
        Number(chartFigures((await freeMember.get("/charts/BTC?tf=1h")).body).trades.replace(/,/g, "")),
      );
    },
  );

  it("computes once per close: further views of either page recompute nothing", async () => {
    const before = await computations("1h");
    expect(before).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 3; i++) {
      expect((await member.get("/charts/BTC?tf=1h")).status).toBe(200);
      expect((await member.get("/charts/BTC?tf=1h&fee=0.25")).status).toBe(200);
    }
    expect(await computations("1h")).toBe(before);
  });

  it("warns on the chart page while the coin's history is behind", async () => {
    const page = await member.get("/charts/BTC?tf=1h");
    expect(page.body).toMatch(/id="stale-banner"[^>]*><strong>BTC data is behind:/);
  });

  it("reflects a new candle close at the next view, recomputing that series once", async () => {
    const before = chartFigures((await member.get("/charts/BTC?tf=1h")).body);
    const counted = await computations("1h");
    expect((await server.feed!.ingest(held)).rejected).toBe(0);
    const freeView = chartFigures((await freeMember.get("/charts/BTC?tf=1h")).body);
    expect(await computations("1h")).toBe(counted + 1);
    const fresh = (await loadChartData(server.db.handle, "BTC", "1h"))!;
    expect(fresh.backtest.to).toBe(held[held.length - 1]!.openTime);
    expect(freeView).toEqual(expectedFigures(endedBacktest(fresh, "1h", server.clock())));
    const paid = chartFigures((await member.get("/charts/BTC?tf=1h")).body);
    expect(paid).toEqual(expectedFigures(fresh.backtest));
    // Buy-and-hold runs to the last close, so 48 more hours of BTC move it.
    expect(paid.buyHold).not.toBe(before.buyHold);
    expect(await computations("1h")).toBe(counted + 1);
  });

  it(
    "shows no banner while the feed is live, and a stale " + "banner once no update came for the staleness limit",
    async () => {
      expect((await member.get("/charts/BTC?tf=1h")).body).not.toContain("stale-banner");
      server.clock.advance(server.config.staleAfterMs + 1000);
      const page = await member.get("/charts/BTC?tf=4h");
      expect(page.body).toMatch(/id="stale-banner"[^>]*><strong>BTC data is stale:/);
    },
  );

  it("uses the chosen fee: the numbers are the backtest module's at that fee", async () => {
    const fresh = (await loadChartData(server.db.handle, "BTC", "4h"))!;
    for (const fee of [0, 0.5, 1]) {
      const page = await member.get(`/charts/BTC?tf=4h&fee=${fee}`);
      expect(page.status).toBe(200);
      expect(page.body).toContain(`id="backtest-fee">${fee}% per side`);
      expect(chartFigures(page.body), String(fee)).toEqual(
        expectedFigures(runBacktest(fresh.record.trades, fresh.closes, fee)),
      );
    }
    const zero = chartFigures((await member.get("/charts/BTC?tf=4h&fee=0")).body);
    const one = chartFigures((await member.get("/charts/BTC?tf=4h&fee=1")).body);
    expect(zero.trades).toBe(one.trades);
    expect(Number(one.total.replace(/[^\d.]/g, "")) * (one.total.startsWith("+") ? 1 : -1)).toBeLessThan(
      Number(zero.total.replace(/[^\d.]/g, "")) * (zero.total.startsWith("+") ? 1 : -1),
    );
  });

  it(
    "a fee between the allowed ones answers 303 to the nearest one's " +
      "page; 200 distinct fees only ever show an allowed fee",
    async () => {
      const at = await member.get("/charts/BTC?tf=4h&fee=0.13");
      expect(at.status).toBe(303);
      expect(at.headers.location).toBe("/charts/BTC?tf=4h");
      expect((await member.get("/charts/BTC?tf=4h&fee=0.3")).headers.location).toBe("/charts/BTC?tf=4h&fee=0.25");
      // The attack of issue 23, item 11: a new fee per request. Only the allowed set is ever
      // computed, and each is cached with the series: the page shows one of them.
      const shown = new Set<string>();
      for (let i = 1; i <= 200; i++) {
        const res = await member.get(`/charts/BTC?tf=1d&fee=${(i * 0.0049).toFixed(4)}`);
        expect([200, 303]).toContain(res.status);
        if (res.status === 200) shown.add(/id="backtest-fee">([\d.]+)%/.exec(res.body)![1]!);
        else
          expect(ALLOWED_FEES_PCT.map(String)).toContain(
            new URL(res.headers.location!, server.baseUrl).searchParams.get("fee") ?? String(DEFAULT_FEE_PCT),
          );
      }
      for (const fee of shown) expect(ALLOWED_FEES_PCT.map(String)).toContain(fee);
      // The form offers exactly the allowed fees.
      const page = await member.get("/charts/BTC?tf=1d&fee=0.5");
      expect([...page.body.matchAll(/<option value="([^"]+)"/g)].map((m) => m[1])).toEqual(
        ALLOWED_FEES_PCT.map(String),
      );
      expect(page.body).toContain(`<option value="0.5" selected>`);
    },
  );

  it("refuses a bad fee with a clear 400 page, never a 500", async () => {
    for (const bad of ["abc", "-1", "1.5", "0.12345", "1e-3", "%00", "9".repeat(400)]) {
      const page = await member.get(`/charts/BTC?tf=1h&fee=${encodeURIComponent(bad)}`);
      expect(page.status, bad).toBe(400);
      expect(page.body, bad).toContain("The fee must be a percentage per side from 0 to 1");
    }
  });
});
