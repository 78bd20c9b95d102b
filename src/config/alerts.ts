/** Message delivery through the Telegram Bot API: the bot, how its updates arrive, retries. */
import { fail, flag, httpUrl, optionalText, type Parsed, type Rule, wholeNumber } from "./parse.ts";

/** How the bot's updates (a member's `/start <token>`) reach the service (docs/alerts.md). */
export const TELEGRAM_UPDATE_MODES = ["polling", "webhook", "off"] as const;
export type TelegramUpdateMode = (typeof TELEGRAM_UPDATE_MODES)[number];

export const alertsEnv = {
  TELEGRAM_API_BASE: httpUrl,
  TELEGRAM_BOT_TOKEN: optionalText.refine(
    (v) => v === undefined || /^[A-Za-z0-9:_-]{8,200}$/.test(v),
    "must look like 123456:ABC-DEF... (letters, digits, ':', '_', '-')",
  ),
  TELEGRAM_BOT_USERNAME: optionalText.transform((raw, ctx) => {
    const name = raw?.replace(/^@/, "");
    return name === undefined || /^[A-Za-z][A-Za-z0-9_]{4,31}$/.test(name)
      ? name
      : fail(ctx, `must be the bot's username, e.g. SignalsAlertsBot, got "${raw}"`);
  }),
  TELEGRAM_UPDATES: optionalText.transform((raw, ctx) => {
    const mode = raw?.toLowerCase();
    return mode === undefined || (TELEGRAM_UPDATE_MODES as readonly string[]).includes(mode)
      ? (mode as TelegramUpdateMode | undefined)
      : fail(ctx, `must be one of ${TELEGRAM_UPDATE_MODES.join(", ")}, got "${raw}"`);
  }),
  // Telegram allows 1-256 of these characters; a guessable short secret would defeat the check.
  TELEGRAM_WEBHOOK_SECRET: optionalText.refine(
    (v) => v === undefined || /^[A-Za-z0-9_-]{16,256}$/.test(v),
    "must be 16 to 256 letters, digits, '_' or '-'",
  ),
  ALERT_MAX_DELAY: wholeNumber(300, 0, 7 * 24 * 3600),
  ALERT_GIVE_UP_AFTER: wholeNumber(3600, 1, 30 * 24 * 3600),
  ALERT_SEND_TIMEOUT_MS: wholeNumber(10_000, 10, 600_000),
  ALERT_RETRY_BASE_MS: wholeNumber(1000, 1, 3_600_000),
  ALERT_RETRY_MAX_MS: wholeNumber(300_000, 1, 24 * 3_600_000),
  ALERT_WORKER: flag,
};

type AlertsEnv = Parsed<typeof alertsEnv>;

export const alertsRules: Rule<AlertsEnv>[] = [
  {
    holds: (env) =>
      env.TELEGRAM_UPDATES === undefined ||
      env.TELEGRAM_UPDATES === "off" ||
      (env.TELEGRAM_BOT_TOKEN !== undefined && env.TELEGRAM_BOT_USERNAME !== undefined),
    message: "TELEGRAM_UPDATES=polling or webhook needs TELEGRAM_BOT_TOKEN and TELEGRAM_BOT_USERNAME",
  },
  {
    holds: (env) => env.TELEGRAM_UPDATES !== "webhook" || env.TELEGRAM_WEBHOOK_SECRET !== undefined,
    message: "TELEGRAM_UPDATES=webhook needs TELEGRAM_WEBHOOK_SECRET: the webhook accepts only requests carrying it",
  },
];

/** The delivery settings. */
export function alertsConfig(env: AlertsEnv) {
  return Object.freeze({
    /** Base URL of the Telegram Bot API (or a compatible server). */
    telegramApiBase: env.TELEGRAM_API_BASE ?? "https://api.telegram.org",
    /** Bot token; null turns delivery off (outbox rows wait, then expire after giveUpAfterMs). */
    telegramBotToken: env.TELEGRAM_BOT_TOKEN ?? null,
    /** A candle whose close is older than this (ms) when it arrives is history: no alert. */
    maxDelayMs: env.ALERT_MAX_DELAY * 1000,
    /** A message still undelivered this long (ms) after it was written is recorded as failed. */
    giveUpAfterMs: env.ALERT_GIVE_UP_AFTER * 1000,
    /** One sendMessage call may take this long (ms) before it counts as failed. */
    sendTimeoutMs: env.ALERT_SEND_TIMEOUT_MS,
    /** First retry delay (ms); doubles per attempt up to retryMaxMs, with jitter. */
    retryBaseMs: env.ALERT_RETRY_BASE_MS,
    retryMaxMs: Math.max(env.ALERT_RETRY_BASE_MS, env.ALERT_RETRY_MAX_MS),
    /** Run the delivery worker in this process (and the getUpdates poller, when polling). */
    worker: env.ALERT_WORKER ?? true,
    /** The bot's username, for the t.me connect links; null: members type a chat id. */
    telegramBotUsername: env.TELEGRAM_BOT_USERNAME ?? null,
    /**
     * How `/start <token>` messages arrive: getUpdates long polling, POST /webhooks/telegram,
     * or not at all (no Connect button). Default: polling when the bot token and username are set.
     */
    telegramUpdates: (env.TELEGRAM_UPDATES ??
      (env.TELEGRAM_BOT_TOKEN !== undefined && env.TELEGRAM_BOT_USERNAME !== undefined
        ? "polling"
        : "off")) as TelegramUpdateMode,
    /** The secret Telegram sends in X-Telegram-Bot-Api-Secret-Token (set with setWebhook's secret_token). */
    telegramWebhookSecret: env.TELEGRAM_WEBHOOK_SECRET ?? null,
  });
}
