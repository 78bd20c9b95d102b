/**
 * A feeder's push whose outcome it never learns (the answer lost after the service stored the
 * candles, or the call cut after the service read part of it) is retried without sending again
 * what the service already holds: every closed candle reaches the service exactly once, and
 * nothing is lost. The calls go to a real server over the internal listener; only the loss of
 * the answer is simulated, by a client that forwards each call and then fails it.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Candle } from "../../src/engine/candle.ts";
import { FeedMetrics } from "../../src/feeder/feed-metrics.ts";
import { Pusher } from "../../src/feeder/pusher.ts";
import { createServerClient, type PushItem, type ServerClient } from "../../src/feeder/server-client.ts";
import { readCandles } from "../../src/market/store.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

const M15 = 15 * 60_000;
const FEEDER = "feeder-push-retry";

function candles(count: number, firstOpen: number, base: number): Candle[] {
  return Array.from({ length: count }, (_, i) => {
    const open = base + i;
    const close = base + i + (i % 3 === 0 ? -0.5 : 0.75);
    return {
      openTime: firstOpen + i * M15,
      open,
      high: Math.max(open, close) + 1,
      low: Math.min(open, close) - 1,
      close,
      volume: 10 + i,
    };
  });
}

/**
 * A client that forwards the calls to the real one; `failNext` makes the next push fail after
 * the service received the first `delivered` of its updates (all of them by default), as a
 * timeout or a cut connection does. Every update the service received is recorded.
 */
function lossyClient(real: ServerClient) {
  const received: PushItem[] = [];
  let failure: { delivered: number | null } | null = null;
  const client: ServerClient = {
    ...real,
    async push(items, mode) {
      const planned = failure;
      failure = null;
      const sent = planned?.delivered == null ? items : items.slice(0, planned.delivered);
      const result = await real.push(sent, mode);
      received.push(...sent);
      if (planned) throw new ConnectError("the answer was lost", Code.DeadlineExceeded);
      return result;
    },
  };
  return {
    client,
    received,
    failNext(delivered: number | null = null) {
      failure = { delivered };
    },
  };
}

describe("retrying a push whose outcome is unknown", () => {
  let server: TestServer;
  let real: ServerClient;
  const clock = createTestClock(Date.parse("2026-11-15T04:00:00Z"));
  const start = Date.parse("2026-11-14T00:00:00Z");

  beforeAll(async () => {
    server = await startTestServer({ feed: true, clock });
    real = createServerClient(server.internalUrl, INTERNAL_TOKEN, FEEDER);
    await real.acquireLeases(["AAA", "BBB", "CCC"], 60_000);
  });
  afterAll(async () => {
    real?.close();
    await server?.close();
  });

  async function pushThrough(lossy: ReturnType<typeof lossyClient>, items: PushItem[]) {
    const metrics = new FeedMetrics(() => [], M15, clock);
    const pusher = new Pusher(lossy.client, metrics, pino({ level: "silent" }), () => {});
    pusher.enqueue(items, "live");
    await pusher.flushed();
    const duplicates = (await metrics.duplicates.get()).values.reduce((s, v) => s + v.value, 0);
    return { duplicates };
  }

  function expectEachOnce(received: PushItem[], items: PushItem[]) {
    const key = (i: PushItem) => `${i.symbol}|${i.candle.openTime}|${i.closed}`;
    const counts = new Map<string, number>();
    for (const r of received) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
    expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
    expect([...counts.keys()].sort()).toEqual(items.map(key).sort());
  }

  async function expectStored(symbol: string, expected: Candle[]) {
    const stored = await readCandles(server.db.handle, symbol, "15m");
    expect(stored.map((c) => [c.openTime, c.open, c.high, c.low, c.close, c.volume])).toEqual(
      expected.map((c) => [c.openTime, c.open, c.high, c.low, c.close, c.volume]),
    );
  }

  it("does not send again a push the service stored before its answer was lost", async () => {
    const lossy = lossyClient(real);
    const series = candles(12, start, 100);
    const items = series.map((candle) => ({ symbol: "AAA", tf: "15m", candle, closed: true }));
    lossy.failNext();
    const { duplicates } = await pushThrough(lossy, items);
    expect(duplicates).toBe(0);
    expectEachOnce(lossy.received, items);
    await expectStored("AAA", series);
  });

  it("sends exactly the rest of a push the service read only in part", async () => {
    const lossy = lossyClient(real);
    const series = candles(10, start, 200);
    const other = candles(10, start, 300);
    // Both coins interleaved, as several coins' updates share a call.
    const items = series.flatMap((c, i) => [
      { symbol: "BBB", tf: "15m", candle: c, closed: true },
      { symbol: "CCC", tf: "15m", candle: other[i]!, closed: true },
    ]);
    lossy.failNext(7);
    const { duplicates } = await pushThrough(lossy, items);
    expect(duplicates).toBe(0);
    expectEachOnce(lossy.received, items);
    await expectStored("BBB", series);
    await expectStored("CCC", other);
  });
});
