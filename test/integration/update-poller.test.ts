/**
 * The getUpdates poller against the local fake Bot API over real sockets: it hands each update
 * to the handler once, in order; confirms handled updates through the offset (and once more on
 * stop); retries failed requests (500, 409) with backoff; retries an update whose handler
 * failed and skips it after repeated failures; and stops at once in the middle of a long poll.
 */
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TelegramUpdate } from "../../src/alerts/telegram-updates.ts";
import { LONG_POLL_SECONDS, UpdatePoller } from "../../src/alerts/update-poller.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { waitFor } from "../support/reliability.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

describe("UpdatePoller (getUpdates long polling)", () => {
  let telegram: FakeTelegram;
  let poller: UpdatePoller | null = null;

  beforeEach(async () => {
    telegram = await startFakeTelegram();
  });
  afterEach(async () => {
    await poller?.stop();
    poller = null;
    await telegram.close();
  });

  function startPoller(handle: (update: TelegramUpdate) => Promise<void>): UpdatePoller {
    poller = new UpdatePoller({
      apiBase: telegram.apiBase,
      botToken: FAKE_BOT_TOKEN,
      logger: pino({ level: "silent" }),
      handle,
      retryBaseMs: 20,
      retryMaxMs: 100,
    });
    poller.start();
    return poller;
  }

  it("hands each update over once, in order, and confirms it through the offset", async () => {
    const seen: string[] = [];
    startPoller(async (u) => void seen.push(u.message!.text!));
    const first = telegram.injectMessage(1, "/start a");
    telegram.injectMessage(2, "/start b");
    await waitFor(() => seen.length >= 2 || null, EVENT_WAIT_MS, "two updates");
    await waitFor(() => telegram.pendingUpdates.length === 0 || null, EVENT_WAIT_MS, "the updates confirmed");
    telegram.injectMessage(3, "/start c");
    await waitFor(() => seen.length >= 3 || null, EVENT_WAIT_MS, "the third update");
    expect(seen).toEqual(["/start a", "/start b", "/start c"]);
    expect(telegram.updatesRequests[0]!.offset).toBeUndefined();
    expect(telegram.updatesRequests.slice(1).every((r) => r.offset !== undefined && r.offset > first.update_id)).toBe(
      true,
    );
    // The long poll asks Telegram to hold the request.
    expect(telegram.updatesRequests[0]!.timeout).toBe(25);
  });

  it("confirms the last handled update on stop, so a restart is not sent it again", async () => {
    const seen: number[] = [];
    startPoller(async (u) => void seen.push(u.update_id));
    const update = telegram.injectMessage(1, "/start once");
    await waitFor(() => seen.length === 1 || null, EVENT_WAIT_MS, "the update");
    await poller!.stop();
    poller = null;
    expect(telegram.pendingUpdates).toHaveLength(0);
    expect(telegram.updatesRequests.at(-1)).toEqual({ offset: update.update_id + 1, timeout: 0 });
  });

  it("retries failed requests (500, 409) with backoff and then receives the update", async () => {
    telegram.scriptUpdates(
      { status: 500 },
      {
        status: 409,
        body: { ok: false, error_code: 409, description: "Conflict: terminated by other getUpdates request" },
      },
      { status: 200, body: { ok: false } },
    );
    const seen: string[] = [];
    startPoller(async (u) => void seen.push(u.message!.text!));
    telegram.injectMessage(1, "/start late");
    await waitFor(() => seen.length === 1 || null, EVENT_WAIT_MS, "the update after the failures");
    expect(telegram.updatesRequests.length).toBeGreaterThanOrEqual(4);
    expect(seen).toEqual(["/start late"]);
  });

  it("retries an update whose handler failed, and skips it after five failures", async () => {
    const attempts = new Map<number, number>();
    const handled: string[] = [];
    startPoller(async (u) => {
      const n = (attempts.get(u.update_id) ?? 0) + 1;
      attempts.set(u.update_id, n);
      if (u.message!.text === "/start flaky" && n < 3) throw new Error("database down");
      if (u.message!.text === "/start poison") throw new Error("always fails");
      handled.push(u.message!.text!);
    });
    const flaky = telegram.injectMessage(1, "/start flaky");
    const poison = telegram.injectMessage(2, "/start poison");
    telegram.injectMessage(3, "/start after");
    await waitFor(() => handled.includes("/start after") || null, EVENT_WAIT_MS, "the update after the poison one");
    expect(handled).toEqual(["/start flaky", "/start after"]);
    expect(attempts.get(flaky.update_id)).toBe(3);
    expect(attempts.get(poison.update_id)).toBe(5);
  });

  it("stops at once during a long poll", async () => {
    startPoller(async () => {});
    await waitFor(() => telegram.updatesRequests.length >= 1 || null, EVENT_WAIT_MS, "a long poll in flight");
    const started = Date.now();
    await poller!.stop();
    poller = null;
    // A stop that waited for the long poll to end would take most of its LONG_POLL_SECONDS.
    expect(Date.now() - started).toBeLessThan((LONG_POLL_SECONDS * 1000) / 2);
  });
});
