/**
 * Starts message delivery for a server process: the outbox worker over Telegram when a bot
 * token is configured, and, with TELEGRAM_UPDATES=polling, the getUpdates poller that hears
 * members' `/start <token>`. Both run only where ALERT_WORKER is on, so a deployment that runs
 * the worker in one process polls from that one process (Telegram allows one poller per bot).
 * Without a token, alerts still go to the outbox (nothing is lost) and a warning says they are
 * not being sent.
 */
import type { Logger } from "pino";
import { type Clock, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { OutboxWorker } from "./outbox-worker.ts";
import { createTelegramSender } from "./telegram.ts";
import { handleUpdate } from "./telegram-updates.ts";
import { UpdatePoller } from "./update-poller.ts";

export interface AlertDelivery {
  readonly worker: OutboxWorker | null;
  readonly poller: UpdatePoller | null;
  stop(): Promise<void>;
}

export async function startAlertDelivery(
  config: Config,
  db: DbHandle,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<AlertDelivery> {
  const { alerts } = config;
  if (!alerts.worker) return { worker: null, poller: null, stop: async () => {} };
  if (alerts.telegramBotToken === null) {
    logger.warn("TELEGRAM_BOT_TOKEN is not set: alerts and notices are kept in the outbox but not sent");
    return { worker: null, poller: null, stop: async () => {} };
  }
  const telegram = { apiBase: alerts.telegramApiBase, botToken: alerts.telegramBotToken };
  const sender = createTelegramSender({ ...telegram, timeoutMs: alerts.sendTimeoutMs });
  const worker = new OutboxWorker({ db, logger, sender, alerts, publicBaseUrl: config.publicBaseUrl });
  await worker.start();
  const poller =
    alerts.telegramUpdates === "polling"
      ? new UpdatePoller({
          ...telegram,
          logger,
          handle: (update) => handleUpdate({ db, sender, clock, logger }, update),
          retryBaseMs: alerts.retryBaseMs,
          retryMaxMs: alerts.retryMaxMs,
        })
      : null;
  poller?.start();
  return {
    worker,
    poller,
    async stop() {
      await poller?.stop();
      await worker.stop();
    },
  };
}
