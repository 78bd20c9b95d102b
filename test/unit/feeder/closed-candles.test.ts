/**
 * A closed candle the feeder pushes is the exchange's final one, and nothing queued is lost
 * when a coin's updates are discarded during a push (the CI failure of feeder-restart.test.ts:
 * a forming version of an ETH hour stored as closed). Every wait here is on an event the test
 * controls (a promise it resolves), never on time.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { Candle } from "../../../src/engine/candle.ts";
import { CoinFeed } from "../../../src/feeder/coin-feed.ts";
import type { OhlcvRow, SpotExchange } from "../../../src/feeder/exchange.ts";
import { FeedMetrics } from "../../../src/feeder/feed-metrics.ts";
import { KlineStream } from "../../../src/feeder/kline-stream.ts";
import { Pusher } from "../../../src/feeder/pusher.ts";
import type { PushItem, PushResult, ServerClient } from "../../../src/feeder/server-client.ts";

const H = 3_600_000;
const T0 = Date.parse("2026-11-24T00:00:00Z");
const silent = pino({ level: "silent" });
const row = (c: Candle): OhlcvRow => [c.openTime, c.open, c.high, c.low, c.close, c.volume];
const candle = (openTime: number, close: number, volume: number): Candle => ({
  openTime,
  open: 100,
  high: Math.max(100, close),
  low: Math.min(100, close),
  close,
  volume,
});

/** A promise with its resolve, for the test to release a step when it chooses. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

const metrics = () =>
  new FeedMetrics(
    () => [],
    H,
    () => T0,
  );

describe("the pusher", () => {
  it("removes exactly the updates it sent when a coin's queue is discarded while a push is on its way", async () => {
    const sent: PushItem[] = [];
    const firstCallStarted = gate();
    const firstCallAnswer = gate<PushResult>();
    let calls = 0;
    const client = {
      async push(items: readonly PushItem[]) {
        // The first push waits for the test's go; later ones are answered at once.
        if (++calls === 1) {
          firstCallStarted.open();
          await firstCallAnswer.promise;
        }
        sent.push(...items);
        return { accepted: items.length, rejected: 0, duplicates: 0, rejections: [] };
      },
    } as unknown as ServerClient;
    const pusher = new Pusher(client, metrics(), silent, () => {});
    const item = (symbol: string, openTime: number): PushItem => ({
      symbol,
      tf: "1h",
      candle: candle(openTime, 101, 1),
      closed: true,
    });
    pusher.enqueue([item("ETH", T0), item("BTC", T0)], "live");
    await firstCallStarted.promise;
    // While that push is on its way: ETH's lease is lost (its queue dropped) and BTC closes another candle.
    pusher.discard("ETH");
    pusher.enqueue([item("BTC", T0 + H)], "live");
    firstCallAnswer.open({ accepted: 2, rejected: 0, duplicates: 0, rejections: [] });
    await pusher.flushed();
    expect(sent.map((i) => [i.symbol, i.candle.openTime])).toEqual([
      ["ETH", T0],
      ["BTC", T0],
      ["BTC", T0 + H],
    ]);
  });

  it("keeps only a coin's latest forming price behind a slow push, and never reorders or drops a close", async () => {
    const pushes: PushItem[][] = [];
    const firstCallStarted = gate();
    const firstCallAnswer = gate<PushResult>();
    const client = {
      async push(items: readonly PushItem[]) {
        pushes.push([...items]);
        if (pushes.length === 1) {
          firstCallStarted.open();
          await firstCallAnswer.promise;
        }
        return { accepted: items.length, rejected: 0, duplicates: 0, rejections: [] };
      },
    } as unknown as ServerClient;
    const pusher = new Pusher(client, metrics(), silent, () => {});
    const forming = (symbol: string, openTime: number, close: number): PushItem => ({
      symbol,
      tf: "1h",
      candle: candle(openTime, close, 1),
      closed: false,
    });
    const closed = (symbol: string, openTime: number, close: number): PushItem => ({
      ...forming(symbol, openTime, close),
      closed: true,
    });
    pusher.enqueue([forming("BTC", T0, 101)], "live");
    await firstCallStarted.promise;
    // While that push is on its way: BTC's forming price moves twice, ETH's three times, then
    // BTC's candle closes and the next one forms twice; the push in flight is never touched.
    pusher.enqueue([forming("BTC", T0, 102), forming("ETH", T0, 201)], "live");
    pusher.enqueue([forming("BTC", T0, 103), forming("ETH", T0, 202)], "live");
    pusher.enqueue([forming("ETH", T0, 203), closed("BTC", T0, 104)], "live");
    pusher.enqueue([forming("BTC", T0 + H, 105)], "live");
    pusher.enqueue([forming("BTC", T0 + H, 106)], "live");
    firstCallAnswer.open({ accepted: 1, rejected: 0, duplicates: 0, rejections: [] });
    await pusher.flushed();
    const seen = (items: PushItem[]) => items.map((i) => [i.symbol, i.candle.openTime, i.candle.close, i.closed]);
    expect(pushes.map(seen)).toEqual([
      [["BTC", T0, 101, false]],
      [
        ["BTC", T0, 103, false],
        ["ETH", T0, 203, false],
        ["BTC", T0, 104, true],
        ["BTC", T0 + H, 106, false],
      ],
    ]);
  });
});

describe("a coin feed", () => {
  it(
    "pushes a candle the exchange closed while a gap was being filled with " +
      "the closing message's values, not the forming ones it had read",
    async () => {
      const last = T0; // the service holds closed candles up to here
      const next = candle(last + H, 102, 50);
      const formingSeen = candle(last + 2 * H, 104.5, 75); // the stream's row before the close
      const final = candle(last + 2 * H, 109, 106); // the exchange's closing message
      const restCalls: Array<number | undefined> = [];
      const gapRead = gate();
      const finishGapRead = gate();
      const subscribed = gate();
      const exchange = {
        id: "binance",
        markets: {},
        has: {},
        coolDownUntil: 0,
        onKline: null,
        onSocketLost: null,
        async fetchOHLCV(_symbol: string, _tf: string, since?: number): Promise<OhlcvRow[]> {
          restCalls.push(since);
          // The first read (backfill to the present) sees `next` still forming.
          if (restCalls.length === 1) return [row({ ...next, close: 101, volume: 10 })];
          // The gap read: the exchange closes the later candle while this answer is on its way.
          gapRead.open();
          await finishGapRead.promise;
          return [row(next), row(formingSeen)];
        },
        // The subscription goes out; the test then plays the exchange's messages through onKline.
        watchOHLCVForSymbols(): Promise<unknown> {
          subscribed.open();
          return new Promise(() => {});
        },
        async unWatchOHLCVForSymbols() {},
        async loadMarkets() {
          return {};
        },
        async close() {},
      } as unknown as SpotExchange;
      const pushed: PushItem[] = [];
      const pusher = {
        enqueue: (items: readonly PushItem[]) => pushed.push(...items),
        discard() {},
      } as unknown as Pusher;
      const klines = new KlineStream(exchange, "1h", silent);
      const feed = new CoinFeed(
        "ETH",
        "ETH/USDT",
        { known: true, lastClosedOpenTime: last },
        {
          exchange,
          klines,
          pusher,
          metrics: metrics(),
          logger: silent,
          tf: "1h",
          tfMs: H,
          historyCandles: 60,
          silenceMs: 3_600_000,
          auditEveryMs: 3_600_000,
          now: () => T0,
        },
      );
      feed.start();
      // The stream first delivers the later candle, still forming (the feed missed `next`'s close).
      await subscribed.promise;
      exchange.onKline!({ market: "ETH/USDT", timeframe: "1h", row: row(formingSeen), closed: false });
      await gapRead.promise;
      // The exchange closes it while the gap is being read.
      exchange.onKline!({ market: "ETH/USDT", timeframe: "1h", row: row(final), closed: true });
      finishGapRead.open();
      const closedPushes = () => pushed.filter((p) => p.closed);
      await new Promise<void>((resolve) => {
        const poll = () => (closedPushes().length >= 2 ? resolve() : setImmediate(poll));
        poll();
      });
      await feed.stop();
      klines.stop();
      expect(closedPushes().map((p) => p.candle)).toEqual([next, final]);
    },
  );
});
