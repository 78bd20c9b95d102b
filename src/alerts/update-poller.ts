/**
 * Receives the bot's updates by getUpdates long polling (TELEGRAM_UPDATES=polling): one request
 * at a time, each held open by Telegram for up to LONG_POLL_SECONDS, then every update handed to
 * the handler in order. The offset (last update id + 1) confirms the handled updates to Telegram
 * on the next request, and once more on stop, so a restart is not sent them again. A failed
 * request (network, 5xx, 409 while a webhook is set or another poller runs, 401 for a wrong
 * token) is retried after an exponential backoff; a handler failure (the database) leaves the
 * update unconfirmed and retries it, skipping it after MAX_HANDLER_ATTEMPTS so one bad update
 * cannot stop the bot. Runs in the process that runs the outbox worker (delivery.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { errorSummary } from "../logger.ts";
import { backoffMs } from "../retry.ts";
import { botAgent, botMethodUrl, postJson, readReply } from "./bot-api.ts";
import { refusalText } from "./telegram.ts";
import { parseUpdate, type TelegramUpdate } from "./telegram-updates.ts";

/** How long Telegram may hold one getUpdates request open when there is nothing to say. */
export const LONG_POLL_SECONDS = 25;
/** Updates per request (Telegram allows 1-100; /start messages are rare). */
const BATCH_LIMIT = 50;
/** A getUpdates answer of 50 updates fits well within this. */
const MAX_ANSWER_BYTES = 1024 * 1024;
const MAX_HANDLER_ATTEMPTS = 5;

export interface UpdatePollerOptions {
  readonly apiBase: string;
  readonly botToken: string;
  readonly logger: Logger;
  readonly handle: (update: TelegramUpdate) => Promise<void>;
  /** First retry delay after a failed request and its cap (ms). */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** Long-poll time per request (s); tests shorten it. */
  readonly longPollSeconds?: number;
}

export class UpdatePoller {
  private readonly options: UpdatePollerOptions;
  private readonly url: URL;
  private readonly agent;
  private readonly stopping = new AbortController();
  private loopDone: Promise<void> | null = null;
  /** The next update id to ask for; undefined until the first answer. */
  private offset: number | undefined;
  /** The offset Telegram was last told (updates below it are confirmed). */
  private confirmed: number | undefined;
  private failures = 0;
  private handlerFailures = 0;

  constructor(options: UpdatePollerOptions) {
    this.options = options;
    this.url = botMethodUrl(options, "getUpdates");
    this.agent = botAgent(this.url, 1);
  }

  start(): void {
    this.loopDone ??= this.loop();
  }

  /** Ends the request in flight, waits for the loop, and confirms what was handled. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loopDone;
    if (this.offset !== undefined && this.offset !== this.confirmed) {
      await this.request(0, AbortSignal.timeout(2000)).catch(() => {});
    }
    void this.agent.close();
  }

  private async request(timeoutS: number, signal: AbortSignal): Promise<unknown[]> {
    const payload = JSON.stringify({
      offset: this.offset,
      timeout: timeoutS,
      limit: BATCH_LIMIT,
      allowed_updates: ["message"],
    });
    const sentOffset = this.offset;
    const answer = await postJson(this.url, payload, this.agent, (timeoutS + 10) * 1000, {
      signal,
      maxAnswerBytes: MAX_ANSWER_BYTES,
    });
    const reply = readReply(answer);
    if (answer.status !== 200 || reply.ok !== true || !Array.isArray(reply.result))
      throw new Error(`getUpdates refused: ${refusalText(answer.status, reply, this.options.botToken)}`);
    this.confirmed = sentOffset;
    return reply.result;
  }

  private async loop(): Promise<void> {
    const { logger } = this.options;
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      try {
        const updates = await this.request(this.options.longPollSeconds ?? LONG_POLL_SECONDS, signal);
        this.failures = 0;
        for (const raw of updates) {
          if (signal.aborted || !(await this.handleOne(raw))) break;
        }
      } catch (err) {
        if (signal.aborted) break;
        this.failures++;
        const waitMs = backoffMs(this.failures, this.options.retryBaseMs, this.options.retryMaxMs, "equal");
        // Neither Node's network errors nor refusalText() quote the URL (it holds the token).
        logger.warn({ err: errorSummary(err), retryInMs: waitMs }, "telegram getUpdates failed");
        await sleep(waitMs, undefined, { signal }).catch(() => {});
      }
    }
  }

  /** Handles one update; false when it must be retried (the handler failed), after a pause. */
  private async handleOne(raw: unknown): Promise<boolean> {
    const id = (raw as { update_id?: unknown })?.update_id;
    if (typeof id !== "number" || !Number.isSafeInteger(id)) return true; // nothing to confirm it by
    const update = parseUpdate(raw);
    try {
      if (update !== null) await this.options.handle(update);
    } catch (err) {
      this.handlerFailures++;
      if (this.handlerFailures < MAX_HANDLER_ATTEMPTS) {
        const waitMs = backoffMs(this.handlerFailures, this.options.retryBaseMs, this.options.retryMaxMs, "equal");
        this.options.logger.warn(
          { err: errorSummary(err), updateId: id, retryInMs: waitMs },
          "telegram update not handled; retrying",
        );
        await sleep(waitMs, undefined, { signal: this.stopping.signal }).catch(() => {});
        return false;
      }
      this.options.logger.error(
        { err: errorSummary(err), updateId: id },
        "telegram update skipped after repeated failures",
      );
    }
    this.handlerFailures = 0;
    this.offset = id + 1;
    return true;
  }
}
