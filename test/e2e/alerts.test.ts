/**
 * Alerts end to end: a live candle close that changes the signal is stored as an event with
 * its outbox rows in the candle's transaction, delivered to a fake Telegram Bot API over HTTP,
 * and the API answer right after carries the same signal id.
 */

import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { disconnectChat } from "../../src/alerts/telegram-connect.ts";
import type { Candle } from "../../src/engine/index.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { waitFor } from "../support/reliability.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";

const H = 3_600_000;
const update = (symbol: string, c: Candle, closed = true): CandleUpdate => ({ symbol, tf: "1h", ...c, closed });

let telegram: FakeTelegram;
let server: TestServer;
const start = Date.UTC(2026, 10, 12);
const { history, breaker } = structureBreak(start);

beforeAll(async () => {
  telegram = await startFakeTelegram();
  // The clock stands just after the breaker's close: that close is live.
  const clock = createTestClock(breaker.openTime + H + 5_000);
  server = await startTestServer({
    feed: true,
    clock,
    env: {
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      ALERT_RETRY_BASE_MS: "20",
      ALERT_RETRY_MAX_MS: "200",
    },
  });
});

afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

describe("a live structure break", () => {
  it("alerts the subscribed member once, and the API shows the same signal id", async () => {
    const admin = createClient(
      AdminService,
      createConnectTransport({
        baseUrl: server.internalUrl,
        httpVersion: "1.1",
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
            return next(req);
          },
        ],
      }),
    );
    const member = await server.account();
    const other = await server.account();
    await admin.setAlerts({
      accountId: BigInt(member.accountId),
      alerts: { chatId: "4242", symbols: ["ZZA"], timeframes: ["1h", "4h"] },
    });
    await admin.setAlerts({
      accountId: BigInt(other.accountId),
      alerts: { chatId: "4343", symbols: ["ETH"], timeframes: ["1h"] },
    });
    // Follows ZZA 1h but disconnected its chat: nothing is queued for it.
    const disconnected = await server.account();
    await admin.setAlerts({
      accountId: BigInt(disconnected.accountId),
      alerts: { chatId: "4444", symbols: ["ZZA"], timeframes: ["1h"] },
    });
    await disconnectChat(server.db.handle, disconnected.accountId);

    // History is imported as a backfill: events stored, nobody alerted.
    await server.feed!.ingest(
      history.map((c) => update("ZZA", c)),
      { alerts: false },
    );
    await server.feed!.ingest([update("ZZA", breaker)]);
    const [message] = await telegram.waitForDelivered(1);
    expect(message!.chatId).toBe("4242");
    const eventId = `ZZA-1h-${breaker.openTime}`;
    expect(message!.eventId).toBe(eventId);
    expect(message!.text).toContain("ZZA 1h: LONG");
    expect(message!.text).toContain("Educational information, not investment advice.");
    expect(message!.text).toContain(`${server.config.publicBaseUrl}/charts/ZZA?tf=1h`);
    // The first 8 characters of the event's hash in the public signal log, on the signal's line.
    const [chained] = await server.db.handle.rows<{ chain_hash: string }>(
      sql`SELECT chain_hash FROM signal_events WHERE id = ${eventId}`,
    );
    expect(chained!.chain_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(message!.text).toContain(`\nSignal ${eventId}\nLog ${chained!.chain_hash.slice(0, 8)}\n`);

    const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=ZZA&tf=1h`, {
      headers: { "x-api-key": member.apiKey },
    });
    const body = (await res.json()) as { signals: { signal: string; confirmed: boolean; signal_id: string | null }[] };
    expect(body.signals[0]).toMatchObject({ signal: "LONG", confirmed: true, signal_id: eventId });
    // The event: the outbox worker has finished every row the break queued (none left to send).
    await waitFor(
      async () =>
        (await server.db.handle.rows(sql`SELECT id FROM outbox WHERE sent_at IS NULL AND failed_at IS NULL`)).length ===
        0,
      30_000,
      "the outbox drained",
    );
    expect(telegram.received).toHaveLength(1);
    expect(
      await server.db.handle.rows(sql`SELECT id FROM outbox WHERE account_id = ${disconnected.accountId}`),
    ).toEqual([]);
  });
});
