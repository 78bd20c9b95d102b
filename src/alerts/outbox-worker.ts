/**
 * Delivers the outbox at least once. Rows are leased (lease_until) in a short transaction, sent,
 * then acknowledged (in groups, as they are delivered), so:
 *  - a crash between send and acknowledgement repeats each unacknowledged message once after the lease ends,
 *    rendered again from the same row: identical, with the same event id;
 *  - nothing pending is lost across a restart, and nothing acknowledged is ever sent again.
 * Failures back off exponentially with jitter, a 429 waits its retry_after (and pauses this
 * worker: Telegram's flood control is per bot), and a row still undelivered after
 * giveUpAfterMs is recorded as failed with its last error. Any number of worker processes may
 * run: FOR UPDATE SKIP LOCKED hands each row to one of them, and the leases of every row a
 * worker holds are renewed while it works through them, so no row is taken over while its
 * worker is alive. Lease, retry and give-up times are the database's.
 *
 * Claims do not wait for the previous claim to be delivered: while lanes are busy the worker
 * keeps claiming (up to `batchSize` × CLAIMS_HELD rows in hand), so a chat with many messages
 * holds one lane while the other lanes send to the chats of later claims. A boundary's alerts
 * come out in event order, a dozen chats per event; a barrier after each claim left most lanes
 * idle behind the one chat with the longest queue.
 *
 * A chat's messages go out in order even when one must wait: a row rescheduled for a retry hands
 * back the chat's rows this worker holds behind it (unsent, their attempt uncounted), and a claim
 * takes no row of a chat while an earlier row of that chat waits for its retry. Stopping hands
 * back every held row not yet started, so a stop waits only for the sends in flight.
 */
import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { AlertConfig } from "../config.ts";
import { OUTBOX_READY } from "../db/channels.ts";
import type { DbHandle } from "../db/client.ts";
import { errorSummary } from "../logger.ts";
import { isTimeframe } from "../market/timeframes.ts";
import { backoffMs } from "../retry.ts";
import { lowBalanceText, signalAlertText } from "./message-text.ts";
import type { MessageSender, SendOutcome } from "./telegram.ts";

export interface OutboxWorkerDeps {
  readonly db: DbHandle;
  readonly logger: Logger;
  readonly sender: MessageSender;
  readonly alerts: AlertConfig;
  readonly publicBaseUrl: string;
  /** Rows leased per round trip. */
  readonly batchSize?: number;
  /** Messages in flight at once (different chats; one chat's messages go in order). */
  readonly concurrency?: number;
}

interface ClaimedRow {
  id: number | string;
  kind: "signal_alert" | "low_balance";
  chat_id: string | null;
  event_id: string | null;
  payload: { credits_left?: number; threshold?: number } | null;
  attempts: number;
  last_error: string | null;
  expired: boolean;
  symbol: string | null;
  tf: string | null;
  signal: string | null;
  price: number | null;
  defense: number | null;
  atr_pct: number | null;
  candle_open_time: number | string | null;
  chain_hash: string | null;
  demo: boolean | null;
}

/** The rows of one claim while they are delivered; their leases are renewed together. */
interface Batch {
  /** The number of the claim that read these rows (claims are numbered as they start). */
  readonly claim: number;
  /** Local time just before the leases were taken or last renewed: they run at least leaseMs from here. */
  leasedAt: number;
  /** Rows leased and not yet acknowledged, failed or rescheduled by this worker. */
  readonly unfinished: Set<ClaimedRow>;
  /** Rows another worker has leased since (after this worker's lease ran out): never sent here. */
  readonly lost: Set<ClaimedRow>;
  renewing: Promise<void> | null;
}

export interface WorkerCounts {
  sent: number;
  retried: number;
  failed: number;
}

/** Longest idle wait before looking for due retries again. */
const MAX_IDLE_MS = 1000;
/** Rows a worker holds at most, in claims of `batchSize`: enough chats to keep every lane busy. */
const CLAIMS_HELD = 4;
/** Lease left over after the longest send, for the acknowledgement's round trip. */
const LEASE_MARGIN_MS = 2500;

export class OutboxWorker {
  private readonly deps: OutboxWorkerDeps;
  private readonly leaseMs: number;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  /** Bumped by every NOTIFY; a wait that started before the bump returns at once. */
  private wakeups = 0;
  private wake: (() => void) | null = null;
  private pausedUntil = 0;
  /** Delivered rows whose acknowledgement is not written yet, and the write in flight. */
  private acks: number[] = [];
  private ackWriting: Promise<void> | null = null;
  /** Claims with rows not finished yet, oldest first: their leases are renewed together. */
  private readonly batches = new Set<Batch>();
  /** Rows held (claimed and not finished), by id, with their claim. */
  private readonly held = new Map<number, { row: ClaimedRow; batch: Batch }>();
  /** Per chat, its held rows not yet sent, in claim order; a chat is here while it has a lane or waits for one. */
  private readonly chats = new Map<string, ClaimedRow[]>();
  /** Claims started so far (the loop runs one at a time). */
  private claimsStarted = 0;
  /**
   * Chats with a row rescheduled for a retry, and the number of claims started when that
   * reschedule was written: rows of the chat read by those claims may come from a snapshot taken
   * before it (so past the row that must go first) and are handed back. Claims started later see
   * the reschedule and skip the chat until its row is due. Counted in claims, not in time, so
   * that a slow claim cannot outlast the guard.
   */
  private readonly rescheduledChats = new Map<string, number>();
  /** Chats waiting for a lane, in the order their first row was claimed. */
  private readonly waiting: string[] = [];
  private readonly lanes = new Set<Promise<void>>();
  /** Set while the loop waits for room to claim: called when a lane finishes a row. */
  private progress: (() => void) | null = null;
  readonly counts: WorkerCounts = { sent: 0, retried: 0, failed: 0 };

  constructor(deps: OutboxWorkerDeps) {
    this.deps = deps;
    // A lease must outlive one send, or a slow send would be handed to a second worker.
    this.leaseMs = deps.alerts.sendTimeoutMs * 2 + 5_000;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.deps.db.listen(OUTBOX_READY, () => this.nudge());
    this.loopDone = this.loop();
  }

  /** Stops claiming; resolves once the sends in flight are recorded and the held rows not started are handed back. */
  async stop(): Promise<void> {
    this.running = false;
    this.nudge();
    await this.loopDone;
    while (this.lanes.size > 0) await Promise.all(this.lanes);
    await this.acksWritten();
  }

  private nudge(): void {
    this.wakeups++;
    this.wake?.();
    this.progress?.();
  }

  /**
   * Waits up to `ms`. A NOTIFY after `sinceWakeups` was read skips the wait; with null (a pause
   * or a failed round) only the time, a wake-up or stop() ends it, and with `untilProgress` also
   * a lane finishing a row. Never returns at once for null: the loop would spin on microtasks
   * and freeze the process for the whole pause.
   */
  private async idle(sinceWakeups: number | null, ms: number, untilProgress = false): Promise<void> {
    if ((sinceWakeups !== null && this.wakeups !== sinceWakeups) || !this.running || ms <= 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
      if (untilProgress) this.progress = done;
    });
    this.wake = null;
    this.progress = null;
  }

  private async loop(): Promise<void> {
    const batchSize = this.deps.batchSize ?? 128;
    while (this.running) {
      const seen = this.wakeups;
      const pause = this.pausedUntil - Date.now();
      if (pause > 0) {
        await this.idle(null, pause);
        continue;
      }
      try {
        await this.renewDue();
        const room = batchSize * CLAIMS_HELD - this.held.size;
        if (room < batchSize) {
          // Until a lane finishes a row (or a second passes: held leases may need renewing).
          await this.idle(null, MAX_IDLE_MS, true);
          continue;
        }
        this.forgetSettledReschedules();
        const leasedAt = Date.now();
        const claimNo = ++this.claimsStarted;
        const rows = await this.claim(batchSize);
        if (rows.length > 0) {
          this.take(rows, leasedAt, claimNo);
          this.deps.logger.debug(
            { rows: rows.length, claimMs: Date.now() - leasedAt, held: this.held.size },
            "outbox: rows claimed",
          );
          continue;
        }
        await this.idle(seen, await this.msUntilNextDue());
      } catch (err) {
        this.deps.logger.error({ err: errorSummary(err) }, "outbox round failed; retrying");
        await this.idle(null, MAX_IDLE_MS);
      }
    }
  }

  private async claim(limit: number): Promise<ClaimedRow[]> {
    const { giveUpAfterMs } = this.deps.alerts;
    return this.deps.db.rows<ClaimedRow>(sql`
      WITH due AS (
        SELECT id FROM outbox
         WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
           AND (lease_until IS NULL OR lease_until <= now())
           -- A chat's messages in order: none while an earlier one of the chat waits for its retry.
           AND NOT EXISTS (
             SELECT 1 FROM outbox earlier
              WHERE earlier.chat_id = outbox.chat_id AND earlier.id < outbox.id
                AND earlier.sent_at IS NULL AND earlier.failed_at IS NULL AND earlier.next_attempt_at > now())
         ORDER BY id
         LIMIT ${limit}
         FOR UPDATE SKIP LOCKED),
      claimed AS (
        UPDATE outbox o
           SET lease_until = now() + ${this.leaseMs} * interval '1 millisecond', attempts = o.attempts + 1
          FROM due WHERE o.id = due.id
        RETURNING o.id, o.kind, o.chat_id, o.event_id, o.payload, o.attempts, o.last_error,
                  o.created_at <= now() - ${giveUpAfterMs} * interval '1 millisecond' AS expired)
      SELECT c.*, e.symbol, e.tf, e.signal, e.price, e.defense, e.atr_pct, e.candle_open_time, e.chain_hash,
             e.demo
        FROM claimed c LEFT JOIN signal_events e ON e.id = c.event_id
       ORDER BY c.id`);
  }

  private async msUntilNextDue(): Promise<number> {
    const [row] = await this.deps.db.rows<{ wait_ms: number | string | null }>(sql`
      SELECT extract(epoch FROM min(greatest(next_attempt_at, coalesce(lease_until, next_attempt_at))) - now()) * 1000
      AS wait_ms
        FROM outbox WHERE sent_at IS NULL AND failed_at IS NULL`);
    const wait = row?.wait_ms === null || row?.wait_ms === undefined ? MAX_IDLE_MS : Number(row.wait_ms);
    return Math.max(0, Math.min(MAX_IDLE_MS, Math.ceil(wait)));
  }

  /**
   * Queues claimed rows behind their chat's held rows and starts lanes for waiting chats: one
   * chat's messages in order, different chats in parallel, at most `concurrency` at once. A row
   * this worker already holds (its lease ran out and this worker leased it again) stays where it
   * is, under the new lease.
   */
  private take(rows: ClaimedRow[], leasedAt: number, claim: number): void {
    const batch: Batch = { claim, leasedAt, unfinished: new Set(), lost: new Set(), renewing: null };
    for (const row of rows) {
      const id = Number(row.id);
      const mine = this.held.get(id);
      if (mine) {
        mine.row.attempts = row.attempts;
        mine.batch.lost.delete(mine.row);
        continue;
      }
      batch.unfinished.add(row);
      this.held.set(id, { row, batch });
      const key = row.chat_id ?? `#${row.id}`;
      const queue = this.chats.get(key);
      if (queue) queue.push(row);
      else {
        this.chats.set(key, [row]);
        this.waiting.push(key);
      }
    }
    if (batch.unfinished.size > 0) this.batches.add(batch);
    while (this.waiting.length > 0 && this.lanes.size < (this.deps.concurrency ?? 16)) {
      const lane = this.lane()
        .catch((err) =>
          this.deps.logger.error({ err: errorSummary(err) }, "outbox lane failed; its rows wait for their lease"),
        )
        .finally(() => this.lanes.delete(lane));
      this.lanes.add(lane);
    }
  }

  /** Sends waiting chats' rows, a chat at a time, until no chat waits. */
  private async lane(): Promise<void> {
    for (let key = this.waiting.shift(); key !== undefined; key = this.waiting.shift()) {
      const queue = this.chats.get(key)!;
      // Rows of this chat claimed while its earlier ones are sent join this queue: still in order.
      for (let row = queue.shift(); row; row = queue.shift()) {
        const { batch } = this.held.get(Number(row.id))!;
        // Rows that join the queue while it is handed back go back too: the loop goes on.
        if (!this.running || this.readBeforeReschedule(key, batch)) {
          await this.handBack([row, ...queue.splice(0)], null);
          continue;
        }
        try {
          const retryInMs = await this.deliverOne(row, batch);
          if (retryInMs !== null) {
            this.rescheduledChats.set(key, this.claimsStarted);
            await this.handBack(queue.splice(0), null);
          }
        } catch (err) {
          // The chat's rows behind it go back with it, so that they are leased again in order.
          this.deps.logger.error(
            { err: errorSummary(err), outboxId: Number(row.id) },
            "outbox: a message's outcome could not be recorded; it is sent again",
          );
          await this.handBack(queue.splice(0), row);
        } finally {
          this.finish(row, batch);
        }
      }
      this.chats.delete(key);
    }
  }

  /** Whether `batch` was claimed before a reschedule of `chat` was written (see rescheduledChats). */
  private readBeforeReschedule(chat: string, batch: Batch): boolean {
    const lastClaimBefore = this.rescheduledChats.get(chat);
    return lastClaimBefore !== undefined && batch.claim <= lastClaimBefore;
  }

  /** Between claims: drops the reschedules that every held row and the next claim come after. */
  private forgetSettledReschedules(): void {
    let oldest = this.claimsStarted + 1;
    for (const batch of this.batches) oldest = Math.min(oldest, batch.claim);
    for (const [chat, lastClaimBefore] of this.rescheduledChats)
      if (lastClaimBefore < oldest) this.rescheduledChats.delete(chat);
  }

  /**
   * Returns held rows not sent to the queue at once (lease cleared, the claim's attempt taken
   * back) instead of leaving them leased until the lease runs out; `attempted`, a row whose send
   * was tried, goes back with its attempt counted. A row leased by another worker since (its
   * `attempts` moved on) is left alone. If the statement fails, the rows stay leased and are
   * claimed again in order after the lease.
   */
  private async handBack(rows: ClaimedRow[], attempted: ClaimedRow | null): Promise<void> {
    const back = rows.map((row) => ({ row, batch: this.held.get(Number(row.id))!.batch }));
    const all = attempted ? [attempted, ...rows] : rows;
    try {
      if (all.length > 0)
        await this.deps.db.rows(sql`
          UPDATE outbox o SET lease_until = NULL,
                 attempts = CASE WHEN o.id = ${attempted ? Number(attempted.id) : null}::bigint
                                 THEN o.attempts ELSE o.attempts - 1 END
            FROM unnest(${sql.param(all.map((r) => Number(r.id)))}::bigint[],
            ${sql.param(all.map((r) => r.attempts))}::int[]) AS mine(id, attempts)
           WHERE o.id = mine.id AND o.attempts = mine.attempts AND o.sent_at IS NULL AND o.failed_at IS NULL
             AND o.lease_until IS NOT NULL`);
    } catch (err) {
      this.deps.logger.error(
        { err: errorSummary(err), rows: all.length },
        "outbox: could not hand rows back; they are claimed again after their lease",
      );
    } finally {
      for (const { row, batch } of back) this.finish(row, batch);
    }
  }

  private finish(row: ClaimedRow, batch: Batch): void {
    this.held.delete(Number(row.id));
    batch.unfinished.delete(row);
    if (batch.unfinished.size === 0) {
      this.batches.delete(batch);
      this.deps.logger.debug({ deliverMs: Date.now() - batch.leasedAt }, "outbox: claim delivered");
    }
    this.progress?.();
  }

  /** Sends one row and records the outcome; when it was rescheduled for a retry, the ms until it is due. */
  private async deliverOne(row: ClaimedRow, batch: Batch): Promise<number | null> {
    const id = Number(row.id);
    if (row.expired) {
      await this.fail(
        id,
        `gave up after ${row.attempts - 1} attempts${row.last_error ? `; last error: ${row.last_error}` : ""}`,
      );
      return null;
    }
    const text = this.render(row);
    if (row.chat_id === null || text === null) {
      await this.fail(
        id,
        row.chat_id === null ? "no chat id configured for this account" : "the message's event is missing",
      );
      return null;
    }
    // A 429 seen by another lane pauses this one too: keep to the bot's flood limit.
    const pause = this.pausedUntil - Date.now();
    if (pause > 0)
      return this.retry(id, { kind: "retry", error: "paused by flood control", retryAfterMs: pause }, row.attempts);
    // Another worker's now: neither sent nor handed back here.
    if (!(await this.holdLease(batch, row))) return null;
    const outcome = await this.deps.sender.send(row.chat_id, text);
    if (outcome.kind === "sent") this.acknowledge(id);
    else if (outcome.kind === "failed") await this.fail(id, outcome.error);
    else return this.retry(id, outcome, row.attempts);
    return null;
  }

  /**
   * Makes sure the row's lease outlasts the send about to start. Rows are leased a claim at a
   * time but one chat's messages go out one after the other (and chats wait for a free lane), so
   * rows late in a long queue or behind slow sends would still be waiting when their leases ran
   * out, and another worker would lease and send them too, out of order. When the lease left of
   * any claim held could not cover a whole send, every unfinished row of those claims is renewed
   * in one statement (no round trip in the common case). A row another worker has leased since
   * (which bumped its `attempts`) is not renewed: it is that worker's now, and false means "do
   * not send".
   */
  private async holdLease(batch: Batch, row: ClaimedRow): Promise<boolean> {
    await this.renewDue();
    if (!batch.lost.has(row)) return true;
    this.deps.logger.warn({ outboxId: Number(row.id) }, "lease lost to another worker before sending; not sent here");
    return false;
  }

  /** Renews the leases of every held claim whose lease left could not cover a send (one statement, shared). */
  private async renewDue(): Promise<void> {
    for (;;) {
      const due = [...this.batches].filter(
        (b) => b.leasedAt + this.leaseMs - Date.now() < this.deps.alerts.sendTimeoutMs + LEASE_MARGIN_MS,
      );
      if (due.length === 0) return;
      const running = due.find((b) => b.renewing)?.renewing;
      if (running) {
        await running;
        continue;
      }
      const renewing = this.renewLeases(due).finally(() => {
        for (const b of due) b.renewing = null;
      });
      for (const b of due) b.renewing = renewing;
      await renewing;
    }
  }

  private async renewLeases(batches: Batch[]): Promise<void> {
    const rows = batches.flatMap((batch) => [...batch.unfinished].filter((row) => !batch.lost.has(row)));
    const renewedAt = Date.now();
    const kept = await this.deps.db.rows<{ id: number | string }>(sql`
      UPDATE outbox o SET lease_until = now() + ${this.leaseMs} * interval '1 millisecond'
        FROM unnest(${sql.param(rows.map((r) => Number(r.id)))}::bigint[],
        ${sql.param(rows.map((r) => r.attempts))}::int[]) AS mine(id, attempts)
       WHERE o.id = mine.id AND o.attempts = mine.attempts AND o.sent_at IS NULL AND o.failed_at IS NULL
         -- Acknowledged, failed or rescheduled meanwhile (lease cleared): leave it alone.
         AND o.lease_until IS NOT NULL
      RETURNING o.id`);
    const keptIds = new Set(kept.map((r) => Number(r.id)));
    for (const batch of batches) {
      for (const row of batch.unfinished) if (!keptIds.has(Number(row.id))) batch.lost.add(row);
      batch.leasedAt = renewedAt;
    }
  }

  private render(row: ClaimedRow): string | null {
    if (row.kind === "low_balance") {
      return lowBalanceText(
        Number(row.payload?.credits_left ?? 0),
        Number(row.payload?.threshold ?? 0),
        this.deps.publicBaseUrl,
      );
    }
    if (
      row.event_id === null ||
      row.symbol === null ||
      row.tf === null ||
      !isTimeframe(row.tf) ||
      row.signal === null ||
      row.price === null
    )
      return null;
    return signalAlertText(
      {
        eventId: row.event_id,
        symbol: row.symbol,
        tf: row.tf,
        signal: row.signal,
        price: Number(row.price),
        defense: row.defense === null ? null : Number(row.defense),
        atrPct: row.atr_pct === null ? null : Number(row.atr_pct),
        candleOpenTime: Number(row.candle_open_time),
        chainHash: row.chain_hash,
        demo: row.demo === true,
      },
      this.deps.publicBaseUrl,
    );
  }

  /**
   * Queues the acknowledgement of a delivered row. Acks are written in groups: one UPDATE for
   * every row delivered while the previous one was in flight, so a burst of messages costs a
   * few round trips instead of one each. A lane does not wait for its ack (the row stays leased
   * until it is written, so no claim takes it again). A crash before a group is written re-sends those rows
   * once each after their lease, exactly as a crash just before a single ack would.
   */
  private acknowledge(id: number): void {
    this.acks.push(id);
    this.ackWriting ??= this.writeAcks().finally(() => {
      this.ackWriting = null;
    });
  }

  private async writeAcks(): Promise<void> {
    while (this.acks.length > 0) {
      const ids = this.acks;
      this.acks = [];
      try {
        await this.deps.db.rows(
          sql`UPDATE outbox SET sent_at = now(), lease_until = NULL WHERE id = ANY (${sql.param(ids)}::bigint[])`,
        );
        this.counts.sent += ids.length;
      } catch (err) {
        // Not acknowledged: the rows are sent again after their lease (at least once).
        this.deps.logger.error(
          { err: errorSummary(err), rows: ids.length },
          "could not acknowledge delivered messages; they will be re-sent after their lease",
        );
      }
    }
  }

  /** Resolves when every queued acknowledgement has been written (or has failed). */
  private async acksWritten(): Promise<void> {
    while (this.ackWriting) await this.ackWriting;
  }

  private async fail(id: number, error: string): Promise<void> {
    await this.deps.db.rows(
      sql`UPDATE outbox SET failed_at = now(), lease_until = NULL, last_error = ${error} WHERE id = ${id}`,
    );
    this.counts.failed++;
    this.deps.logger.warn({ outboxId: id, error }, "message not delivered; recorded as failed");
  }

  /** Reschedules the row (or records it failed past the give-up point); the ms until it is due, null when failed. */
  private async retry(
    id: number,
    outcome: Extract<SendOutcome, { kind: "retry" }>,
    attempts: number,
  ): Promise<number | null> {
    const { retryBaseMs, retryMaxMs, giveUpAfterMs } = this.deps.alerts;
    const delayMs = outcome.retryAfterMs ?? backoffMs(attempts, retryBaseMs, retryMaxMs, "equal");
    if (outcome.retryAfterMs !== undefined)
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + outcome.retryAfterMs);
    // A retry that could only happen after the give-up point is a failure now, recorded like
    // one found expired when leased: "gave up after N attempts; last error: ...".
    const [row] = await this.deps.db.rows<{ gave_up: boolean; last_error: string }>(sql`
      WITH decided AS (
        SELECT id, created_at + ${giveUpAfterMs} * interval '1 millisecond' < now() + ${delayMs} * interval
        '1 millisecond' AS gave_up
          FROM outbox WHERE id = ${id})
      UPDATE outbox o
         SET lease_until = NULL,
             next_attempt_at = now() + ${delayMs} * interval '1 millisecond',
             failed_at = CASE WHEN d.gave_up THEN now() END,
             last_error = CASE WHEN d.gave_up THEN 'gave up after ' || o.attempts || ' attempts; last error: ' ||
             ${outcome.error}::text ELSE ${outcome.error}::text END
        FROM decided d
       WHERE o.id = d.id
      RETURNING d.gave_up, o.last_error`);
    if (row?.gave_up) {
      this.counts.failed++;
      this.deps.logger.warn({ outboxId: id, error: row.last_error }, "message not delivered; recorded as failed");
      return null;
    }
    this.counts.retried++;
    // The loop may be waiting past this row's next attempt (it looked while the row was leased).
    this.wake?.();
    this.deps.logger.info(
      { outboxId: id, attempts, delayMs, error: outcome.error },
      "message delivery will be retried",
    );
    return delayMs;
  }
}
