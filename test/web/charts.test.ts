/**
 * The member chart page and the public /track-record page in real headless Chromium, over real
 * BTC candles imported through the market feed: the candles draw with a volume pane; the
 * crosshair readout shows the open, high, low, close and time of the candle under the mouse;
 * the axes carry dates and thousands separators; the stale banner shows only when the feed is
 * stale; the equity curve and drawdown are drawn; a fee change gives the backtest module's
 * numbers; /track-record needs no session and states its costs; neither page
 * scrolls sideways on a phone.
 */

import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { readCandleFile } from "../../src/market/csv-candles.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { runBacktest } from "../../src/track-record/backtest.ts";
import { loadChartData } from "../../src/track-record/chart-data.ts";
import { backtestFigures } from "../../src/web/chart-page.ts";
import { formatMyt, formatPrice } from "../../src/web/format.ts";
import { chromiumAvailable, launchChromium, RESULTS_DIR } from "../support/browser.ts";
import { REAL_CANDLES_DIR, realCandlesAvailable } from "../support/real-candles.ts";
import { usingPostgres } from "../support/test-db.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

// Callbacks given to page.evaluate run in the browser (the project's tsconfig has no DOM lib).
declare const document: any;
declare const window: any;
declare const getComputedStyle: any;

const H = 3_600_000;
const EMAIL = "carla.charts@example.test";
const PASSWORD = "a long and correct password";
const DB_SUFFIX = usingPostgres ? "postgres" : "pglite";
const volumeFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

describe.runIf(chromiumAvailable && realCandlesAvailable)("chart page and /track-record in headless Chromium", () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const all: CandleUpdate[] = [];
    for await (const c of readCandleFile(`${REAL_CANDLES_DIR}BTCUSDT_1h.csv.gz`, "BTC", "1h")) all.push(c);
    // The clock stands just after the last real candle closed: the feed is live.
    server = await startTestServer({
      feed: true,
      clock: createTestClock(all[all.length - 1]!.openTime + H + 5 * 60_000),
    });
    expect((await server.feed!.ingest(all)).rejected).toBe(0);
    const account = await server.account({ email: EMAIL });
    await setMemberPassword(server.db.handle, account.accountId, PASSWORD, server.config.passwordHashCost);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    await page.goto(`${server.baseUrl}/signin`);
    await page.fill("#email", EMAIL);
    await page.fill("#password", PASSWORD);
    await Promise.all([page.waitForURL(`${server.baseUrl}/account`), page.press("#password", "Enter")]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function openChart(path: string): Promise<void> {
    await page.goto(`${server.baseUrl}${path}`);
    await page.waitForSelector("#chart[data-chart-ready]");
  }

  it("draws the candles with a volume pane under them", async () => {
    await openChart("/charts/BTC?tf=1h");
    const drawn = await page.evaluate(() => {
      const { chart, candles, volume } = window.signalsChart;
      return {
        panes: chart.panes().length,
        paneHeights: chart.panes().map((p: any) => p.getHeight()),
        candles: candles.data().length,
        volumes: volume.data().filter((v: any) => v.value > 0).length,
        volumePane: volume.getPane().paneIndex(),
      };
    });
    expect(drawn).toMatchObject({ panes: 2, candles: 1500, volumes: 1500, volumePane: 1 });
    expect(drawn.paneHeights[1]).toBeGreaterThan(60);
    expect(drawn.paneHeights[0]).toBeGreaterThan(drawn.paneHeights[1]);
  });

  it("reads out the open, high, low, close, volume and time of the candle under the mouse", async () => {
    await openChart("/charts/BTC?tf=1h");
    const candles = JSON.parse((await page.locator("#chart-data").textContent())!).candles as number[][];
    for (const index of [candles.length - 5, candles.length - 60]) {
      const c = candles[index]!;
      const point = await page.evaluate((time: number) => {
        const { chart, candles: series } = window.signalsChart;
        const box = document.getElementById("chart").getBoundingClientRect();
        const bar = series.data().find((b: any) => b.time === time);
        return {
          x: box.left + chart.timeScale().timeToCoordinate(time),
          y: box.top + series.priceToCoordinate((bar.high + bar.low) / 2),
        };
      }, c[0]!);
      await page.mouse.move(point.x, point.y);
      const openTimeMs = (c[0]! - 8 * 3600) * 1000;
      const expected =
        `${formatMyt(openTimeMs)} \u00b7 O ${formatPrice(c[1]!)} \u00b7 H ${formatPrice(c[2]!)} \u00b7 ` +
        `L ${formatPrice(c[3]!)} \u00b7 C ${formatPrice(c[4]!)} \u00b7 V ${volumeFormat.format(c[5]!)}`;
      await expect.poll(() => page.locator("#chart-readout").textContent(), { timeout: 30_000 }).toBe(expected);
    }
    expect(await page.locator("#chart-readout").textContent()).toMatch(
      /^\d{1,2} [A-Z][a-z]{2} 20\d\d \d\d:\d\d MYT · O \d{1,3}(,\d{3})+\.\d{2} /,
    );
  });

  it("labels the time axis with dates and the price axis with thousands separators", async () => {
    await openChart("/charts/BTC?tf=1h");
    const labels = await page.evaluate(() => {
      const { chart, candles } = window.signalsChart;
      const tick = chart.options().timeScale.tickMarkFormatter;
      const t = Date.UTC(2024, 5, 16, 14) / 1000;
      return {
        price: candles.priceFormatter().format(66123.4),
        small: candles.priceFormatter().format(0.5),
        day: tick(t, 2, "en-US"),
        month: tick(t, 1, "en-US"),
        year: tick(t, 0, "en-US"),
        time: tick(t, 3, "en-US"),
        crosshairTime: chart.options().localization.timeFormatter(t),
        visibleLow: candles.priceScale().getVisibleRange()?.from ?? null,
      };
    });
    expect(labels).toMatchObject({
      price: "66,123.40",
      small: "0.5000",
      day: "16 Jun",
      month: "Jun 2024",
      year: "2024",
      time: "14:00",
      crosshairTime: "16 Jun 2024 14:00",
    });
    // BTC's axis shows prices above a thousand, so its labels do carry separators.
    expect(labels.visibleLow).toBeGreaterThan(1000);
  });

  it("draws the equity curve against buy-and-hold with the maximum drawdown", async () => {
    await openChart("/charts/BTC?tf=4h");
    await page.waitForSelector("#equity-chart[data-chart-ready]");
    const equity = await page.evaluate(() => {
      const e = window.signalsChart.equity;
      const data = JSON.parse(document.getElementById("chart-data").textContent).equity;
      return {
        points: data.length,
        first: data[0],
        canvases: document.querySelectorAll("#equity-chart canvas").length,
        width: document.getElementById("equity-chart").getBoundingClientRect().width,
        series: e !== null,
      };
    });
    expect(equity.series).toBe(true);
    expect(equity.points).toBeGreaterThan(100);
    expect(equity.canvases).toBeGreaterThan(0);
    expect(equity.width).toBeGreaterThan(300);
    // Both lines start at 100 less the entry fee.
    expect(equity.first[1]).toBeCloseTo(99.9, 4);
    expect(equity.first[2]).toBeCloseTo(99.9, 4);
    await page.mouse.move(600, 300);
    // The part worth a picture: levels, chart, backtest and equity curve.
    await page.screenshot({
      path: path.join(RESULTS_DIR, `chart-page-${DB_SUFFIX}.png`),
      fullPage: true,
      clip: { x: 0, y: 0, width: 1280, height: 2000 },
    });
    expect(await page.locator("#backtest-drawdown").textContent()).toMatch(
      /^(\u2212\d+\.\d{2}%|0\.00%) \(buy and hold: \u2212\d+\.\d{2}%\)$/,
    );
  });

  it("recomputes the numbers at a fee chosen in the form, as the backtest module does", async () => {
    await openChart("/charts/BTC?tf=4h");
    const before = await page.locator("#backtest-total").textContent();
    await page.selectOption("#fee", "0.5");
    await Promise.all([page.waitForURL(/fee=0\.5/), page.getByRole("button", { name: "Recompute" }).click()]);
    await page.waitForSelector("#chart[data-chart-ready]");
    const data = (await loadChartData(server.db.handle, "BTC", "4h"))!;
    const expected = backtestFigures(runBacktest(data.record.trades, data.closes, 0.5));
    expect(await page.locator("#backtest-fee").textContent()).toBe("0.5% per side (entry and exit)");
    expect(await page.locator("#backtest-total").textContent()).toBe(expected.total);
    expect(await page.locator("#backtest-avg").textContent()).toBe(expected.avgResult);
    expect(await page.locator("#backtest-winrate").textContent()).toBe(expected.winRate);
    expect(await page.locator("#backtest-buyhold").textContent()).toBe(expected.buyHold);
    expect(await page.locator("#backtest-total").textContent()).not.toBe(before);
    expect(await page.locator("#fee").inputValue()).toBe("0.5");
    // Switching the timeframe keeps the chosen fee.
    expect(await page.getByRole("link", { name: "1d", exact: true }).getAttribute("href")).toBe(
      "/charts/BTC?tf=1d&fee=0.5",
    );
  });

  it(
    "shows /track-record without a session: the live record " + "with its stated costs, not the chart page's backtest",
    async () => {
      const visitor = await browser.newContext();
      const v = await visitor.newPage();
      expect((await v.goto(`${server.baseUrl}/track-record`))!.status()).toBe(200);
      // A desktop window does not scroll sideways either.
      expect(await v.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
      await v.screenshot({ path: path.join(RESULTS_DIR, `track-record-${DB_SUFFIX}.png`), fullPage: true });
      expect(await v.locator("#stated-costs").textContent()).toContain("0.1% fee and 0.03% slippage per side");
      expect(await v.locator("#method").textContent()).toContain("Bailey & López de Prado");
      await visitor.close();
    },
  );

  it("fits a phone (390 × 844): neither page scrolls sideways", async () => {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      storageState: await page.context().storageState(),
    });
    const p = await phone.newPage();
    for (const pathname of ["/track-record", "/charts/BTC?tf=1h"]) {
      expect((await p.goto(`${server.baseUrl}${pathname}`))!.status(), pathname).toBe(200);
      if (pathname.startsWith("/charts/")) await p.waitForSelector("#equity-chart[data-chart-ready]");
      expect(await p.evaluate(() => document.documentElement.scrollWidth), pathname).toBeLessThanOrEqual(390);
      const scrollers = await p.$$eval("body *", (elements) =>
        elements
          .filter(
            (e: any) =>
              e.scrollWidth > e.clientWidth + 1 &&
              ["auto", "scroll"].includes(getComputedStyle(e).overflowX) &&
              e.tagName !== "CANVAS",
          )
          .map((e: any) => e.id || e.className || e.tagName),
      );
      expect(scrollers, pathname).toEqual([]);
      // The picture shows the chart itself (for the chart page) rather than the header.
      if (pathname.startsWith("/charts/")) await p.evaluate(() => document.getElementById("chart-h").scrollIntoView());
      await p.screenshot({
        path: path.join(RESULTS_DIR, `phone-${pathname.replace(/[^a-z0-9]+/gi, "-")}-${DB_SUFFIX}.png`),
      });
    }
    await phone.close();
  });

  it("shows the stale banner only once the coin's feed is stale", async () => {
    await openChart("/charts/BTC?tf=1h");
    expect(await page.locator("#stale-banner").count()).toBe(0);
    server.clock.advance(server.config.staleAfterMs + 1000);
    await openChart("/charts/BTC?tf=1h");
    expect(await page.locator("#stale-banner").textContent()).toContain("BTC data is stale");
    expect(await page.locator("#stale-banner").isVisible()).toBe(true);
  });
});
