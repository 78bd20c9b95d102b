/**
 * Telegram on the web: the account page's Connect (a one-time token, then a 303 to
 * `https://t.me/<bot>?start=<token>`), Send a test alert, Disconnect, the status the page polls
 * while the member presses Start, and `POST /webhooks/telegram`, the bot's updates when
 * TELEGRAM_UPDATES=webhook: accepted only with Telegram's X-Telegram-Bot-Api-Secret-Token
 * header equal (in constant time) to TELEGRAM_WEBHOOK_SECRET.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie } from "hono/cookie";
import { secretsEqual } from "../../accounts/api-key.ts";
import { addressAndEmailBudgets, type ThrottlePolicy, throttleKeys } from "../../accounts/attempt-throttle.ts";
import { entitlement, viewerOf } from "../../accounts/entitlement.ts";
import { getAlertSettings } from "../../alerts/settings.ts";
import type { MessageSender, TelegramOptions } from "../../alerts/telegram.ts";
import { connectLink, createConnectToken, disconnectChat } from "../../alerts/telegram-connect.ts";
import { handleUpdate, parseUpdate } from "../../alerts/telegram-updates.ts";
import { type ErrorCode, errorBodyOf } from "../../errors.ts";
import { errorSummary } from "../../logger.ts";
import { reserveOrRefuse } from "../attempt-refusals.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { clientAddress } from "../http.ts";
import { methodNotAllowed, type PageKit, type Signed, type WebContext, type WebEnv } from "../page-kit.ts";
import { refusalPage } from "../responses.ts";
import { NO_ALERTS_IN_PLAN, type TelegramTestResult, type TelegramView, UNPROVEN_CHAT } from "../telegram-card.ts";

/** The header Telegram sends with every webhook request (setWebhook's secret_token). */
const SECRET_HEADER = "x-telegram-bot-api-secret-token";
/** Largest update accepted; a message update is a few KB. */
const MAX_UPDATE_BYTES = 256 * 1024;
/** Carries the test alert's outcome across the POST's redirect, for one display. */
const TEST_RESULT_COOKIE = "telegram_test";
const TEST_RESULT_MAX_AGE_S = 60;

const json = (c: WebContext, status: number, body: object) =>
  c.json(body, status as 200, { "cache-control": "no-store" });
const jsonError = (c: WebContext, code: ErrorCode, status: number, message: string) =>
  json(c, status, errorBodyOf(code, message));

/**
 * Test alerts a member may send: each is a real Bot API message from the shared bot, so a loop
 * of them could flood a chat and spend the bot's per-bot rate limit that every member's alerts
 * share. Counted per account ("email" side of the throttle) and per client address.
 */
export const TEST_ALERT_THROTTLE: ThrottlePolicy = Object.freeze({
  windowMs: 10 * 60_000,
  perAddress: 20,
  perEmail: 5,
  scope: "tgtest:",
});

/** Reads (and clears) the outcome of the test alert this browser just sent. */
export function takeTelegramTestResult(kit: PageKit, c: WebContext): TelegramTestResult | null {
  const raw = getCookie(c, TEST_RESULT_COOKIE);
  if (raw === undefined) return null;
  kit.setCookie(c, TEST_RESULT_COOKIE, "", 0);
  if (raw === "accepted") return { accepted: true };
  const match = /^refused\.([A-Za-z0-9_-]{0,1200})$/.exec(raw);
  return match ? { accepted: false, error: Buffer.from(match[1]!, "base64url").toString("utf8") } : null;
}

/** What the account page's Telegram card may offer on this server to this member. */
export function telegramView(kit: PageKit, signed: Signed, testResult: TelegramTestResult | null): TelegramView {
  const { alerts } = kit.deps.config;
  return {
    connectable: alerts.telegramBotUsername !== null && alerts.telegramUpdates !== "off",
    canSend: alerts.telegramBotToken !== null,
    alertsInPlan: entitlement(viewerOf(signed.summary, kit.deps.clock()), "alerts").admitted,
    testResult,
  };
}

/**
 * The Bot API sender, loaded with its HTTP client (undici) on the first message: a server
 * process that serves pages but sends no test alert or webhook reply never holds them
 * (bench/README.md, "Each worker holding 400 × 5").
 */
function senderOnFirstUse(options: TelegramOptions): MessageSender {
  let sender: Promise<MessageSender> | null = null;
  const loading = () =>
    import("../../alerts/telegram.ts").then(
      ({ createTelegramSender }) => createTelegramSender(options),
      (err: unknown) => {
        sender = null;
        throw err;
      },
    );
  return { send: async (chatId, text) => (await (sender ??= loading())).send(chatId, text) };
}

/** Routes of `/account/telegram/*` and `/webhooks/telegram`. */
export function telegramRoutes(kit: PageKit): Hono<WebEnv> {
  const { alerts } = kit.deps.config;
  const sender =
    alerts.telegramBotToken === null
      ? null
      : senderOnFirstUse({
          apiBase: alerts.telegramApiBase,
          botToken: alerts.telegramBotToken,
          timeoutMs: alerts.sendTimeoutMs,
        });
  const app = new Hono<WebEnv>();
  connectRoutes(kit, app);
  testAlertRoutes(kit, app, sender);
  if (alerts.telegramUpdates === "webhook") webhookRoutes(kit, app, sender!);
  return app;
}

const backToAccount = { href: "/account", text: "Back to your account" };

/** Connect (a one-time t.me link), the status telegram.js polls meanwhile, and Disconnect. */
function connectRoutes(kit: PageKit, app: Hono<WebEnv>): void {
  const { config, db, clock } = kit.deps;
  app.post("/account/telegram/connect", kit.memberForm, async (c) => {
    const signed = c.get("signed")!;
    if (!telegramView(kit, signed, null).connectable) {
      return kit.page(
        c,
        404,
        renderMessagePage(
          signed.ctx,
          "Telegram is not set up",
          "This server cannot connect Telegram in one tap. Enter your chat id on the account page instead.",
          backToAccount,
        ),
      );
    }
    const token = await createConnectToken(db, signed.session.accountId, clock());
    return kit.seeOther(c, connectLink(config.alerts.telegramBotUsername!, token));
  });
  app.all("/account/telegram/connect", methodNotAllowed(kit, "POST"));

  app.post("/account/telegram/disconnect", kit.memberForm, async (c) => {
    await disconnectChat(db, c.get("signed")!.session.accountId);
    return kit.seeOther(c, "/account?telegram-disconnected");
  });
  app.all("/account/telegram/disconnect", methodNotAllowed(kit, "POST"));

  // Polled by telegram.js while the member presses Start in Telegram.
  app.get("/account/telegram/status", kit.session, async (c) => {
    const signed = c.get("signed");
    if (signed === null) return jsonError(c, "unauthorized", 401, "Sign in first.");
    const chatId = (await getAlertSettings(db, signed.session.accountId))?.chatId ?? null;
    return json(c, 200, { connected: chatId !== null });
  });
  app.all("/account/telegram/status", methodNotAllowed(kit, "GET"));
}

/** Send a test alert: to a chat proven through /start, on a plan with alerts, within its budget. */
function testAlertRoutes(kit: PageKit, app: Hono<WebEnv>, sender: MessageSender | null): void {
  const { config, db, clock } = kit.deps;
  app.post("/account/telegram/test", kit.memberForm, async (c) => {
    const signed = c.get("signed")!;
    const now = clock();
    if (!entitlement(viewerOf(signed.summary, now), "test_alert").admitted) {
      return kit.page(
        c,
        403,
        renderMessagePage(signed.ctx, "Alerts are not in your plan", NO_ALERTS_IN_PLAN, backToAccount),
      );
    }
    const settings = await getAlertSettings(db, signed.session.accountId);
    const chatId = settings?.chatId ?? null;
    if (sender === null || chatId === null) {
      return kit.page(
        c,
        409,
        renderMessagePage(
          signed.ctx,
          "No chat to test",
          "Connect Telegram first; then a test alert can be sent to it.",
          backToAccount,
        ),
      );
    }
    // A typed chat id proves nothing: the bot would message whatever chat was typed.
    if (!settings!.chatVerified) {
      return kit.page(c, 409, renderMessagePage(signed.ctx, "Connect Telegram first", UNPROVEN_CHAT, backToAccount));
    }
    const keys = throttleKeys(
      clientAddress(kit.nodeRequest(c), config.trustProxy),
      `account-${signed.session.accountId}`,
      TEST_ALERT_THROTTLE.scope,
    );
    const limitText =
      `${TEST_ALERT_THROTTLE.perEmail} test alerts can be sent ` +
      `every ${TEST_ALERT_THROTTLE.windowMs / 60_000} minutes.`;
    const refused = await reserveOrRefuse(
      db,
      addressAndEmailBudgets(keys, TEST_ALERT_THROTTLE),
      TEST_ALERT_THROTTLE,
      now,
      limitText,
    );
    if (refused !== null) return refusalPage(c, signed.ctx, "Too many test alerts", refused, backToAccount);
    const outcome = await sender.send(
      chatId,
      `Test alert from ${config.publicBaseUrl}: this chat receives your signal alerts. Nothing else to do.`,
    );
    const value =
      outcome.kind === "sent"
        ? "accepted"
        : `refused.${Buffer.from(outcome.error.slice(0, 200), "utf8").toString("base64url")}`;
    kit.setCookie(c, TEST_RESULT_COOKIE, value, TEST_RESULT_MAX_AGE_S);
    // POST -> 303 -> GET: a reload of the page does not send another message.
    return kit.seeOther(c, "/account#alerts-h");
  });
  app.all("/account/telegram/test", methodNotAllowed(kit, "POST"));
}

/** `POST /webhooks/telegram`: the bot's updates pushed by Telegram (setWebhook), checked by its secret token. */
function webhookRoutes(kit: PageKit, app: Hono<WebEnv>, sender: MessageSender): void {
  const { config, db, clock, logger } = kit.deps;
  const secret = config.alerts.telegramWebhookSecret!;
  const updateDeps = { db, sender: sender!, clock, logger };
  const limit = bodyLimit({
    maxSize: MAX_UPDATE_BYTES,
    onError: (c) => jsonError(c as WebContext, "payload_too_large", 413, "The update is too large."),
  });
  app.post(
    "/webhooks/telegram",
    async (c, next) => {
      // Before the body is read: a request without the secret costs nothing but this check.
      if (!secretsEqual(secret, c.req.header(SECRET_HEADER) ?? "")) {
        logger.warn(
          { sent: c.req.header(SECRET_HEADER) !== undefined },
          "telegram webhook refused: secret token missing or wrong",
        );
        return jsonError(c, "unauthorized", 401, "The X-Telegram-Bot-Api-Secret-Token header is missing or wrong.");
      }
      await next();
    },
    limit,
    async (c) => {
      let body: unknown;
      try {
        body = JSON.parse(await c.req.text());
      } catch {
        return jsonError(c, "bad_request", 400, "The body is not JSON.");
      }
      const update = parseUpdate(body);
      if (update === null)
        return jsonError(
          c,
          "bad_request",
          400,
          "The body is not a Telegram Update (an object with a numeric update_id).",
        );
      try {
        await handleUpdate(updateDeps, update);
      } catch (err) {
        // Telegram retries a failed delivery, and the token is still unused (one transaction).
        logger.error({ err: errorSummary(err) }, "telegram webhook update not handled");
        return jsonError(c, "unavailable", 503, "The update could not be handled now; it will be retried.");
      }
      return json(c, 200, { ok: true });
    },
  );
  app.all("/webhooks/telegram", methodNotAllowed(kit, "POST"));
}
