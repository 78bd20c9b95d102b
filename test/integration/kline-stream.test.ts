/**
 * The feeder's kline multiplexer with the real ccxt against the fake Binance, which holds
 * clients to Binance's websocket limits: 400 coins on one connection, their subscriptions
 * grouped, every update delivered to its coin in order with the exchange's closed mark, and a
 * dropped socket failing every coin at once.
 */
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSpotExchange, type KlineMessage, loadExchange, type SpotExchange } from "../../src/feeder/exchange.ts";
import {
  KlineStream,
  type KlineSubscription,
  MAX_STREAMS_PER_CONNECTION,
  MESSAGES_PER_SECOND,
  STREAMS_PER_MESSAGE,
} from "../../src/feeder/kline-stream.ts";
import { type FakeExchange, startFakeExchange, WS_MAX_INCOMING_PER_SECOND } from "../support/fake-exchange.ts";
import { realMarket } from "../support/fake-market.ts";
import { realCandlesAvailable } from "../support/real-candles.ts";
import { waitFor } from "../support/reliability.ts";

const COINS = 400;
const TF_MS = 15 * 60_000;

/** Reads a subscription until `count` messages arrived. */
async function read(sub: KlineSubscription, count: number): Promise<KlineMessage[]> {
  const got: KlineMessage[] = [];
  while (got.length < count) got.push(...(await sub.next()));
  return got;
}

/** Moves the market on until every subscription has heard from the exchange (subscriptions go out asynchronously). */
async function everyHears(fake: FakeExchange, subs: KlineSubscription[], timeoutMs: number): Promise<void> {
  let heard = 0;
  for (const sub of subs)
    void sub.next().then(
      () => heard++,
      () => {},
    );
  await waitFor(
    () => {
      if (heard < subs.length) fake.tick();
      return heard === subs.length;
    },
    timeoutMs,
    () => `${heard} of ${subs.length} coins heard`,
    250,
  );
}

describe.runIf(realCandlesAvailable)("kline stream: 400 coins over one websocket", () => {
  let fake: FakeExchange;
  let exchange: SpotExchange;
  let klines: KlineStream;
  let bases: string[];
  beforeAll(async () => {
    const market = realMarket(COINS, 80);
    bases = market.map((c) => c.base);
    fake = await startFakeExchange({ coins: market, interval: "15m", intervalMs: TF_MS, history: 60 });
    await loadExchange("binance");
    exchange = createSpotExchange("binance", { restUrl: fake.restUrl, wsUrl: fake.wsUrl });
    await exchange.loadMarkets();
    klines = new KlineStream(exchange, "15m", pino({ level: "silent" }));
  });
  afterAll(async () => {
    klines?.stop();
    await exchange?.close().catch(() => {});
    await fake?.close();
  });

  it(
    "subscribes 400 coins in two SUBSCRIBE messages on one connection, inside Binance's " +
      "limits; each update reaches its coin in order with the closed mark",
    async () => {
      const subs = bases.map((b) => klines.open(`${b}/USDT`));
      await waitFor(
        () => fake.wsStats().maxStreamsOnOneConnection === COINS,
        20_000,
        () => `subscribed: ${JSON.stringify(fake.wsStats())}`,
      );
      const stats = fake.wsStats();
      expect(stats.connections).toBe(1);
      expect(stats.controlMessages).toBe(COINS / STREAMS_PER_MESSAGE);
      expect(stats.maxStreamsInOneMessage).toBe(STREAMS_PER_MESSAGE);
      expect(stats.maxIncomingInOneSecond).toBeLessThanOrEqual(MESSAGES_PER_SECOND + 1);
      expect(WS_MAX_INCOMING_PER_SECOND).toBeGreaterThan(MESSAGES_PER_SECOND + 1);
      expect(stats.breaches).toEqual([]);

      fake.tick();
      fake.closeCandles();
      for (const [i, base] of bases.entries()) {
        const messages = await read(subs[i]!, 3);
        const closed = fake.closed(base).at(-1)!;
        expect(messages.map((m) => [m.market, m.row[0], m.closed])).toEqual([
          [`${base}/USDT`, closed.openTime, false],
          [`${base}/USDT`, closed.openTime, true],
          [`${base}/USDT`, closed.openTime + TF_MS, false],
        ]);
        expect(messages[1]!.row).toEqual([
          closed.openTime,
          closed.open,
          closed.high,
          closed.low,
          closed.close,
          closed.volume,
        ]);
      }
      for (const sub of subs) sub.close();
    },
  );

  it(
    "a dropped socket fails every coin's subscription at " + "once; subscribing again takes one new connection",
    async () => {
      const subs = bases.map((b) => klines.open(`${b}/USDT`));
      // The closes above queued an UNSUBSCRIBE (cancelled now) or sent it (then this waits for its answer).
      await everyHears(fake, subs, 20_000);
      const before = fake.wsStats();
      fake.dropSockets();
      const outcomes = await Promise.allSettled(subs.map((s) => read(s, Number.MAX_SAFE_INTEGER)));
      expect(outcomes.every((o) => o.status === "rejected")).toBe(true);

      const again = bases.map((b) => klines.open(`${b}/USDT`));
      await everyHears(fake, again, 20_000);
      const after = fake.wsStats();
      expect(after.connections).toBe(before.connections + 1);
      expect(after.maxOpen).toBe(1);
      expect(after.maxIncomingInOneSecond).toBeLessThanOrEqual(MESSAGES_PER_SECOND + 1);
      expect(after.breaches).toEqual([]);
      for (const sub of again) sub.close();
    },
  );

  it(`refuses a stream beyond ${MAX_STREAMS_PER_CONNECTION} on one connection, saying what to do`, async () => {
    const stream = new KlineStream(exchange, "1h", pino({ level: "silent" }));
    try {
      const subs = Array.from({ length: MAX_STREAMS_PER_CONNECTION + 1 }, (_, i) => stream.open(`X${i}/USDT`));
      await expect(subs.at(-1)!.next()).rejects.toThrow(
        /more than 1024 kline streams on one connection; run another feeder/,
      );
      for (const sub of subs) sub.close();
    } finally {
      stream.stop();
      // Hand the hooks back to the stream under test above.
      klines = new KlineStream(exchange, "15m", pino({ level: "silent" }));
    }
  });
});
