/**
 * Telegram in one tap, in headless Chromium against a real server and the local fake Bot API:
 * the member presses Connect Telegram, the t.me link carries a one-time token, the member's
 * `/start <token>` reaches the server through getUpdates long polling, and the open account page
 * shows the connection by itself. Then a test alert (accepted, then refused with 403), the
 * token's single use and expiry, Disconnect, and the phone layout. The last suite runs a server
 * in webhook mode: the secret header decides, and a refused request changes nothing.
 */
import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { CONNECT_TOKEN_TTL_MS } from "../../src/alerts/telegram-connect.ts";
import { START_REPLIES } from "../../src/alerts/telegram-updates.ts";
import { TEST_ALERT_THROTTLE } from "../../src/web/routes/telegram.ts";
import { chromiumAvailable, launchChromium } from "../support/browser.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram, webhookPost } from "../support/fake-telegram.ts";
import { waitFor } from "../support/reliability.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";
import { csrfTokenOf, WebClient } from "../support/web-client.ts";

declare const document: any;

const BOT = "SignalsTestBot";
const EMAIL = "tina.telegram@example.test";
const PASSWORD = "a long and correct password";
const CHAT = 424242;
const LINK = new RegExp(`^https://t\\.me/${BOT}\\?start=([A-Za-z0-9_-]{43})$`);

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

async function boundChat(server: TestServer, accountId: number): Promise<string | null | undefined> {
  const [row] = await server.db.handle.rows<{ chat_id: string | null }>(
    sql`SELECT chat_id FROM alert_settings WHERE account_id = ${accountId}`,
  );
  return row?.chat_id;
}

/** The messages the fake received for one chat. */
const messagesTo = (telegram: FakeTelegram, chatId: number) =>
  telegram.received.filter((m) => m.chatId === String(chatId));

describe.skipIf(!chromiumAvailable)("Connect Telegram in one tap (getUpdates polling)", () => {
  let telegram: FakeTelegram;
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let accountId: number;
  let token = "";
  const tmeRequests: string[] = [];

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    server = await startTestServer({
      clock: createTestClock(Date.now()),
      env: {
        TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        TELEGRAM_API_BASE: telegram.apiBase,
        TELEGRAM_BOT_USERNAME: BOT,
        ALERT_RETRY_BASE_MS: "50",
        ALERT_RETRY_MAX_MS: "200",
      },
    });
    accountId = (await server.account({ email: EMAIL })).accountId;
    await setMemberPassword(server.db.handle, accountId, PASSWORD, server.config.passwordHashCost);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // t.me is the one address outside the server the page leads to: answered here, never fetched.
    await context.route("https://t.me/**", (route) => {
      tmeRequests.push(route.request().url());
      return route.fulfill({ status: 200, contentType: "text/html", body: "<title>Telegram</title>Telegram" });
    });
    page = await context.newPage();
    await page.goto(`${server.baseUrl}/signin`);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${server.baseUrl}/account`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await telegram?.close();
  });

  /** Presses Connect Telegram; returns the token of the t.me link the new tab opened. */
  async function pressConnect(): Promise<string> {
    const [tab] = await Promise.all([
      context.waitForEvent("page"),
      page.getByRole("button", { name: "Connect Telegram" }).click(),
    ]);
    await tab.waitForURL(LINK);
    const found = LINK.exec(tab.url())![1]!;
    await tab.close();
    return found;
  }

  it("offers Connect Telegram; the link carries a one-time token stored only as its hash", async () => {
    expect(await page.locator("#telegram-state").textContent()).toContain("Alerts are off");
    // The manual chat id is the folded fallback.
    expect(await page.locator("details", { has: page.locator("#chat_id") }).getAttribute("open")).toBeNull();
    token = await pressConnect();
    expect(tmeRequests).toEqual([`https://t.me/${BOT}?start=${token}`]);
    const rows = await server.db.handle.rows<{ token_hash: string; account_id: string; expires_ms: number }>(
      sql`SELECT token_hash, account_id::text, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_ms
        FROM telegram_connect_tokens`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ token_hash: sha256(token), account_id: String(accountId) });
    expect(Number(rows[0]!.expires_ms)).toBe(server.clock() + CONNECT_TOKEN_TTL_MS);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(await page.locator("#telegram-waiting").textContent()).toContain("press Start");
  });

  it("binds the chat when the member presses Start, and the open page shows it by itself", async () => {
    telegram.injectMessage(CHAT, `/start ${token}`);
    await page.waitForURL(/\/account\?telegram-connected/, { timeout: 15_000 });
    expect(await page.getByRole("status").first().textContent()).toBe("Telegram connected.");
    expect(await page.locator("#telegram-chat").textContent()).toBe("\u2022\u2022\u2022\u20224242");
    expect(await page.content()).not.toContain(String(CHAT));
    expect(await boundChat(server, accountId)).toBe(String(CHAT));
    const [reply] = await waitFor(
      () => (messagesTo(telegram, CHAT).length > 0 ? messagesTo(telegram, CHAT) : null),
      5000,
      "the bot's reply",
    );
    expect(reply!.text).toBe(START_REPLIES.connected(EMAIL));
    expect(await server.db.handle.rows(sql`SELECT 1 FROM telegram_connect_tokens`)).toHaveLength(0);
  });

  it("the token works once: a second /start with it binds nothing and says so", async () => {
    const other = 515151;
    telegram.injectMessage(other, `/start ${token}`);
    const [reply] = await waitFor(
      () => (messagesTo(telegram, other).length > 0 ? messagesTo(telegram, other) : null),
      5000,
      "the refusal",
    );
    expect(reply!.text).toBe(START_REPLIES.unknown);
    expect(await boundChat(server, accountId)).toBe(String(CHAT));
    // The poller confirmed both updates to Telegram (offset past them).
    await waitFor(() => telegram.pendingUpdates.length === 0 || null, EVENT_WAIT_MS, "confirmed updates");
  });

  it("keeps the connected chat when coins are saved with the chat id left empty", async () => {
    await page.getByLabel("Coins").fill("btc");
    await page.getByRole("checkbox", { name: "4h", exact: true }).check();
    await page.getByRole("button", { name: "Save alert settings" }).click();
    await page.waitForURL(/\/account\?alerts-saved$/);
    expect(await page.locator("#telegram-state").textContent()).toBe(
      "Alerts go to Telegram chat \u2022\u2022\u2022\u20224242 for BTC on 4h.",
    );
    expect(await boundChat(server, accountId)).toBe(String(CHAT));
  });

  it("sends one test alert and shows that Telegram accepted it; a reload sends nothing more", async () => {
    const before = telegram.received.length;
    await page.getByRole("button", { name: "Send a test alert" }).click();
    await page.waitForURL(`${server.baseUrl}/account#alerts-h`);
    expect(await page.locator("#telegram-test-result").textContent()).toContain("Telegram accepted the test alert");
    const sent = telegram.received.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ chatId: String(CHAT) });
    expect(sent[0]!.text).toContain("Test alert");
    await page.reload();
    expect(await page.locator("#telegram-test-result").count()).toBe(0);
    expect(telegram.received.length).toBe(before + 1);
  });

  it("shows Telegram's refusal when the bot was blocked (403)", async () => {
    telegram.scriptFor(String(CHAT), {
      status: 403,
      body: { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" },
    });
    await page.getByRole("button", { name: "Send a test alert" }).click();
    await page.waitForURL(`${server.baseUrl}/account#alerts-h`);
    const result = page.locator("#telegram-test-result");
    expect(await result.getAttribute("role")).toBe("alert");
    expect(await result.textContent()).toContain("HTTP 403: Forbidden: bot was blocked by the user");
  });

  it("fits a phone (390×844) with no sideways scroll, connected and not", async () => {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      storageState: await context.storageState(),
    });
    const p = await phone.newPage();
    await p.goto(`${server.baseUrl}/account`);
    expect(await p.locator("#telegram-chat").count()).toBe(1);
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await phone.close();
  });

  it("disconnects: the chat is unbound, the coins stay, and Connect is offered again", async () => {
    await page.getByRole("button", { name: "Disconnect" }).click();
    await page.waitForURL(/\/account\?telegram-disconnected$/);
    expect(await boundChat(server, accountId)).toBeNull();
    expect(await page.locator("#telegram-state").textContent()).toContain(
      "Telegram is not connected: alerts for BTC on 4h are not sent",
    );
    expect(await page.getByRole("button", { name: "Connect Telegram" }).count()).toBe(1);
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      storageState: await context.storageState(),
    });
    const p = await phone.newPage();
    await p.goto(`${server.baseUrl}/account`);
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await phone.close();
  });

  it("an expired token binds nothing and the bot says it expired; a new one replaces the old", async () => {
    const first = await pressConnect();
    const second = await pressConnect();
    expect(second).not.toBe(first);
    // The first link was voided by the second.
    const voided = 616161;
    telegram.injectMessage(voided, `/start ${first}`);
    await waitFor(
      () => (messagesTo(telegram, voided).length > 0 ? true : null),
      5000,
      "the refusal of the voided link",
    );
    expect(messagesTo(telegram, voided)[0]!.text).toBe(START_REPLIES.unknown);
    server.clock.advance(CONNECT_TOKEN_TTL_MS);
    const late = 717171;
    telegram.injectMessage(late, `/start ${second}`);
    await waitFor(() => (messagesTo(telegram, late).length > 0 ? true : null), EVENT_WAIT_MS, "the expiry reply");
    expect(messagesTo(telegram, late)[0]!.text).toBe(START_REPLIES.expired);
    expect(await boundChat(server, accountId)).toBeNull();
    await page.reload();
    expect(await page.locator("#telegram-chat").count()).toBe(0);
  });

  it("answers a bare /start with how to connect, and ignores other messages", async () => {
    const stranger = 818181;
    telegram.injectMessage(stranger, "hello bot");
    telegram.injectMessage(stranger, "/start");
    await waitFor(
      () => (messagesTo(telegram, stranger).length > 0 ? true : null),
      EVENT_WAIT_MS,
      "the reply to /start",
    );
    expect(messagesTo(telegram, stranger).map((m) => m.text)).toEqual([START_REPLIES.noToken]);
  });

  it("has no Telegram webhook in polling mode", async () => {
    const res = await webhookPost(`${server.baseUrl}/webhooks/telegram`, "whatever-secret-0123456789", {
      update_id: 1,
    });
    expect(res.status).toBe(404);
  });
});

describe("Connect Telegram through the webhook (TELEGRAM_UPDATES=webhook)", () => {
  const SECRET = "webhook-secret-0123456789abcdef";
  let telegram: FakeTelegram;
  let server: TestServer;
  let client: WebClient;
  let accountId: number;
  let webhook: string;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    server = await startTestServer({
      env: {
        TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        TELEGRAM_API_BASE: telegram.apiBase,
        TELEGRAM_BOT_USERNAME: BOT,
        TELEGRAM_UPDATES: "webhook",
        TELEGRAM_WEBHOOK_SECRET: SECRET,
      },
    });
    accountId = (await server.account({ email: EMAIL })).accountId;
    await setMemberPassword(server.db.handle, accountId, PASSWORD, server.config.passwordHashCost);
    client = new WebClient(server.baseUrl);
    expect((await client.signIn(EMAIL, PASSWORD)).status).toBe(303);
    webhook = `${server.baseUrl}/webhooks/telegram`;
  });

  afterAll(async () => {
    await server?.close();
    await telegram?.close();
  });

  async function connectToken(): Promise<string> {
    const page = await client.get("/account");
    const res = await client.post("/account/telegram/connect", { csrf_token: csrfTokenOf(page.body) });
    expect(res.status).toBe(303);
    return LINK.exec(String(res.headers.location))![1]!;
  }

  const startUpdate = (updateId: number, chatId: number, text: string) => ({
    update_id: updateId,
    message: {
      message_id: 1,
      date: 1,
      chat: { id: chatId, type: "private" },
      from: { id: chatId, is_bot: false, first_name: "M" },
      text,
    },
  });

  it("refuses a wrong or missing secret with 401 and changes nothing; the token still works after", async () => {
    const token = await connectToken();
    for (const secret of [null, "", "wrong-secret-0123456789abcdef", SECRET.slice(0, -1)]) {
      const res = await webhookPost(webhook, secret, startUpdate(1, CHAT, `/start ${token}`));
      expect(res.status, `secret ${secret}`).toBe(401);
      expect(res.body).toMatchObject({ ok: false, error: "unauthorized" });
    }
    expect(await boundChat(server, accountId)).toBeUndefined();
    expect(telegram.received).toHaveLength(0);
    expect(await server.db.handle.rows(sql`SELECT 1 FROM telegram_connect_tokens`)).toHaveLength(1);

    const ok = await webhookPost(webhook, SECRET, startUpdate(2, CHAT, `/start ${token}`));
    expect(ok).toEqual({ status: 200, body: { ok: true } });
    expect(await boundChat(server, accountId)).toBe(String(CHAT));
    expect(telegram.received.map((m) => [m.chatId, m.text])).toEqual([[String(CHAT), START_REPLIES.connected(EMAIL)]]);
    // Webhook mode never polls.
    expect(telegram.updatesRequests).toHaveLength(0);
  });

  it("answers 400 to a body that is not a Telegram update, 200 to updates it ignores, never 500", async () => {
    for (const body of [
      "not json",
      "[]",
      "{}",
      JSON.stringify({ update_id: "x" }),
      JSON.stringify({ update_id: 3, message: { chat: {} } }),
    ]) {
      const res = await webhookPost(webhook, SECRET, body);
      expect(res.status, body).toBe(400);
      expect(res.body).toMatchObject({ ok: false, error: "bad_request" });
    }
    expect((await webhookPost(webhook, SECRET, { update_id: 4, edited_message: { text: "x" } })).status).toBe(200);
    const big = await webhookPost(webhook, SECRET, JSON.stringify({ update_id: 5, pad: "x".repeat(300 * 1024) }));
    expect(big.status).toBe(413);
    expect(await boundChat(server, accountId)).toBe(String(CHAT));
  });

  it("refuses the signed-in forms without the CSRF token or from another origin, changing nothing", async () => {
    const tokensBefore = await server.db.handle.rows(sql`SELECT token_hash FROM telegram_connect_tokens`);
    const sent = telegram.received.length;
    const csrf = csrfTokenOf((await client.get("/account")).body);
    expect((await client.post("/account/telegram/connect", {})).status).toBe(403);
    expect((await client.post("/account/telegram/test", { csrf_token: "wrong" })).status).toBe(403);
    expect(
      (await client.post("/account/telegram/disconnect", { csrf_token: csrf }, { origin: "https://evil.example" }))
        .status,
    ).toBe(403);
    expect(await server.db.handle.rows(sql`SELECT token_hash FROM telegram_connect_tokens`)).toEqual(tokensBefore);
    expect(telegram.received.length).toBe(sent);
    expect(await boundChat(server, accountId)).toBe(String(CHAT));
  });

  it("tells only a signed-in member whether a chat is connected", async () => {
    const anonymous = await new WebClient(server.baseUrl).get("/account/telegram/status");
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.body)).toMatchObject({ ok: false, error: "unauthorized" });
    const mine = await client.get("/account/telegram/status");
    expect(mine.status).toBe(200);
    expect(JSON.parse(mine.body)).toEqual({ connected: true });
  });

  it(
    "lets a member send at most 5 test alerts in 10 minutes; " + "the 6th is refused with 429 and sends nothing",
    async () => {
      const sent = telegram.received.length;
      for (let i = 1; i <= TEST_ALERT_THROTTLE.perEmail; i++) {
        const res = await client.post("/account/telegram/test", {
          csrf_token: csrfTokenOf((await client.get("/account")).body),
        });
        expect(res.status, `test alert ${i}`).toBe(303);
      }
      expect(telegram.received.length).toBe(sent + TEST_ALERT_THROTTLE.perEmail);
      const refused = await client.post("/account/telegram/test", {
        csrf_token: csrfTokenOf((await client.get("/account")).body),
      });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      expect(refused.body).toContain("Too many test alerts");
      expect(telegram.received.length).toBe(sent + TEST_ALERT_THROTTLE.perEmail);
    },
  );

  it("replaces the bound chat with the chat of a newer link", async () => {
    const token = await connectToken();
    const res = await webhookPost(webhook, SECRET, startUpdate(6, 999001, `/start@${BOT} ${token}`));
    expect(res.status).toBe(200);
    expect(await boundChat(server, accountId)).toBe("999001");
  });
});
