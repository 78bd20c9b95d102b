/**
 * The demo feed follows each coin's walk step by step (it no longer regenerates the series
 * since the anchor on every tick): what it sends must be exactly the candles of the full
 * series, the last 1,500 closed ones as history, then the previous and the forming candle of
 * the bucket that holds the clock at each tick, also across several buckets at once.
 */

import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEMO_COINS,
  demoCandles,
  demoPriceAt,
  demoTick,
  formingAt,
  onTickGrid,
  startDemoFeed,
} from "../../../src/market/demo-feed.ts";
import type { MarketFeed } from "../../../src/market/feed.ts";
import type { CandleUpdate } from "../../../src/market/validate.ts";
import { waitFor } from "../../support/reliability.ts";

const STEP = 15 * 60_000;
const ANCHOR = Date.UTC(2026, 0, 1);

/** A MarketFeed that records what it is given (the demo feed only calls `ingest`). */
function recordingFeed() {
  const calls: { updates: CandleUpdate[]; alerts: boolean | undefined; demo: boolean | undefined }[] = [];
  const feed = {
    async ingest(source: Iterable<CandleUpdate>, options: { alerts?: boolean; demo?: boolean } = {}) {
      const updates = [...source];
      calls.push({ updates, alerts: options.alerts, demo: options.demo });
      return { accepted: updates.length, duplicates: 0, rejected: 0, rejections: [], reasons: {} };
    },
  };
  return { calls, feed: feed as unknown as MarketFeed };
}

/** The full series up to (and including) the bucket that holds `now`. */
const seriesAt = (symbol: string, now: number) => demoCandles(symbol, Math.floor((now - ANCHOR) / STEP) + 1);

let stop = () => {};
afterEach(() => stop());

describe("demo feed", () => {
  it(
    "sends the last 1,500 closed candles, then the previous and forming " +
      "candle of the clock's bucket, as the full series has them",
    async () => {
      let now = Date.UTC(2026, 10, 23, 12, 7, 30);
      const { calls, feed } = recordingFeed();
      stop = await startDemoFeed(feed, () => now, pino({ level: "silent" }), 20);

      const [history, firstTick] = calls;
      expect(history!.alerts).toBe(false);
      expect(history!.demo).toBe(true);
      expect(firstTick!.demo).toBe(true);
      for (const symbol of Object.keys(DEMO_COINS)) {
        const series = seriesAt(symbol, now);
        const sent = history!.updates.filter((u) => u.symbol === symbol);
        expect(sent).toHaveLength(1_500);
        expect(sent.map(({ symbol: _s, tf: _t, closed: _c, ...candle }) => candle)).toEqual(series.slice(-1_501, -1));
        expect(sent.every((u) => u.closed && u.tf === "15m")).toBe(true);

        const tick = firstTick!.updates.filter((u) => u.symbol === symbol);
        const current = series.at(-1)!;
        expect(tick).toEqual([
          { symbol, tf: "15m", ...series.at(-2)!, closed: true },
          {
            symbol,
            tf: "15m",
            ...formingAt(current, (now - current.openTime) / STEP, demoTick(symbol)),
            closed: false,
          },
        ]);
      }

      // The clock jumps three buckets: the next tick sends the candle that closed last and the new forming one.
      now += 3 * STEP;
      const sent = calls.length;
      const jumped = await waitFor(() => calls[sent], 5_000, "a tick after the clock moved");
      for (const symbol of Object.keys(DEMO_COINS)) {
        const series = seriesAt(symbol, now);
        const current = series.at(-1)!;
        expect(jumped.updates.filter((u) => u.symbol === symbol)).toEqual([
          { symbol, tf: "15m", ...series.at(-2)!, closed: true },
          {
            symbol,
            tf: "15m",
            ...formingAt(current, (now - current.openTime) / STEP, demoTick(symbol)),
            closed: false,
          },
        ]);
        expect(demoPriceAt(symbol, now)).toBe(current.close);
      }
      expect(calls.every((c) => c.demo === true)).toBe(true);
    },
  );

  it("quotes every price on the coin's tick grid (0.01 for BTC, 0.0001 for XRP), forming candles too", () => {
    expect(demoTick("BTC")).toBe(0.01);
    expect(demoTick("XRP")).toBe(0.0001);
    const now = Date.UTC(2026, 10, 23, 12, 7, 30);
    for (const symbol of Object.keys(DEMO_COINS)) {
      const series = seriesAt(symbol, now).slice(-3_000);
      const current = series.at(-1)!;
      const candles = [
        ...series,
        formingAt(current, 0.37, demoTick(symbol)),
        formingAt(current, 0.9, demoTick(symbol)),
      ];
      for (const c of candles) {
        for (const price of [c.open, c.high, c.low, c.close])
          expect(isTickPrice(price, demoTick(symbol)), `${symbol} ${price}`).toBe(true);
        expect(c.low <= Math.min(c.open, c.close) && c.high >= Math.max(c.open, c.close)).toBe(true);
      }
    }
    expect(onTickGrid(48754.90198462567, 0.01)).toBe(48754.9);
    expect(onTickGrid(0.612345, 0.0001)).toBe(0.6123);
  });
});

/** A price written as the market writes it: a multiple of the tick, with no more decimals than the tick. */
function isTickPrice(price: number, tick: number): boolean {
  const decimals = Math.round(-Math.log10(tick));
  return Number(price.toFixed(decimals)) === price && Math.abs(price / tick - Math.round(price / tick)) < 1e-6;
}
