/**
 * Starts message delivery for a server process: the outbox worker over Telegram when a bot
 * token is configured. Without one, alerts still go to the outbox (nothing is lost) and a
 * warning says they are not being sent.
 */
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { OutboxWorker } from "./outbox-worker.ts";
import { createTelegramSender } from "./telegram.ts";

export interface AlertDelivery {
  readonly worker: OutboxWorker | null;
  stop(): Promise<void>;
}

export async function startAlertDelivery(config: Config, db: DbHandle, logger: Logger): Promise<AlertDelivery> {
  const { alerts } = config;
  if (!alerts.worker) return { worker: null, stop: async () => {} };
  if (alerts.telegramBotToken === null) {
    logger.warn("TELEGRAM_BOT_TOKEN is not set: alerts and notices are kept in the outbox but not sent");
    return { worker: null, stop: async () => {} };
  }
  const sender = createTelegramSender({ apiBase: alerts.telegramApiBase, botToken: alerts.telegramBotToken, timeoutMs: alerts.sendTimeoutMs });
  const worker = new OutboxWorker({ db, logger, sender, alerts, publicBaseUrl: config.publicBaseUrl });
  await worker.start();
  return { worker, stop: () => worker.stop() };
}
