/**
 * The check-and-charge of paid calls. Each call is one `charge_call` (checks in the contract's
 * order, then the charge), and calls that arrive together are sent as ONE statement: one
 * transaction and one database round trip for the whole group. A commit costs a WAL flush,
 * so grouping is what lets the ledger keep up with many callers on a small machine.
 *
 * Within a group the calls run in key-hash order. Every group locks accounts in that same
 * global order, so two groups cannot deadlock. If the statement fails, the transaction rolls
 * back and every call in the group is refused as unavailable, with nothing charged.
 *
 * A statement whose connection breaks before its answer arrives may still have committed (the
 * server ran it and failed only to send the result). Answering 503 then would be a charge the
 * caller was told did not happen. So each statement also inserts a `charge_attempts` row under
 * an id chosen here; on such a failure the batcher resolves the attempt once the database
 * answers again: the row with results means "committed" (the calls get their real answers),
 * and otherwise it inserts the id itself as a fence, which the lost statement's own insert
 * would collide with, so that statement can never commit (the calls get 503, nothing charged).
 *
 * A host cut off by a silent partition breaks no connection: the database layer finds the link
 * dead (src/db/link-watch.ts) and fails the statement as on a broken connection. Its callers are
 * then answered 503 at once, not after resolveWithinMs (the database is known to be out of
 * reach), and the attempt is resolved in the background once the link returns.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { errorSummary } from "../logger.ts";
import { type ChargeRequest, chargeBatchStatement, type KnownVersions } from "./charge-statement.ts";
import { adjustTokens } from "./tokens.ts";

export type ChargeOutcome =
  | "ok"
  | "invalid_api_key"
  | "node_tier_required"
  | "subscription_inactive"
  | "insufficient_credits"
  | "rate_limited"
  /** Not charged: the store holds a newer market version of a requested coin (see `market`). */
  | "behind";

export interface ChargeResult {
  outcome: ChargeOutcome;
  accountId: number | null;
  plan: string | null;
  /** Grant + packs after this call (0 when refused for lack of Tokens). */
  tokensLeft: number | null;
  /** Charged calls today (MYT), after this call when it was charged. */
  callsToday: number | null;
  /** True exactly when this charge took the balance below the low-balance threshold. */
  lowBalanceCrossed: boolean;
  /** For 'behind': the store's versions of the coins the process was behind on. */
  market: KnownVersions | null;
}

export interface ChargeRow {
  outcome: ChargeOutcome;
  account_id: number | string | null;
  plan: string | null;
  credits_left: number | string | null;
  calls_today: number | string | null;
  low_balance_crossed: boolean;
  market?: Record<string, number | string> | string | null;
}

/** Inserts a fence for an attempt; a row back means the attempt had not committed and now never will. */
const FENCE_SQL =
  "INSERT INTO charge_attempts (id, results) VALUES ($1::uuid, NULL) ON CONFLICT (id) DO NOTHING RETURNING id";
const ATTEMPT_SQL = `SELECT results FROM charge_attempts WHERE id = $1::uuid`;

/** Largest group sent in one statement. */
const MAX_BATCH = 128;

const toNumber = (v: number | string | null): number | null => (v === null ? null : Number(v));

function marketOf(raw: ChargeRow["market"]): KnownVersions | null {
  if (raw === null || raw === undefined) return null;
  const parsed = typeof raw === "string" ? (JSON.parse(raw) as Record<string, number | string>) : raw;
  return Object.fromEntries(Object.entries(parsed).map(([symbol, version]) => [symbol, Number(version)]));
}

export function toResult(row: ChargeRow): ChargeResult {
  return {
    outcome: row.outcome,
    accountId: toNumber(row.account_id),
    plan: row.plan,
    tokensLeft: toNumber(row.credits_left),
    callsToday: toNumber(row.calls_today),
    lowBalanceCrossed: row.low_balance_crossed === true,
    market: marketOf(row.market),
  };
}

/**
 * A time-ordered UUID (version 7: 48 bits of Unix milliseconds, then random bits), so attempt
 * ids are appended to the primary-key index and old rows can be purged by id range. The random
 * part comes from randomUUID, which draws from a cached block of entropy (randomBytes per id was
 * a synchronous call into the crypto library per statement); its layout already carries the
 * RFC variant bits.
 */
export function uuidV7(now = Date.now()): string {
  const ms = now.toString(16).padStart(12, "0");
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${randomUUID().slice(15)}`;
}

/** Calls of a group in key-hash order (the global lock order), with their positions in `requests`. */
function lockOrder(requests: ChargeRequest[]): number[] {
  return requests
    .map((_, i) => i)
    .sort((a, b) =>
      requests[a]!.keyHash < requests[b]!.keyHash ? -1 : requests[a]!.keyHash > requests[b]!.keyHash ? 1 : a - b,
    );
}

/** Puts rows that came back in lock order back into the order of the requests. */
function inRequestOrder(rows: ChargeRow[], order: number[]): ChargeResult[] {
  if (rows.length !== order.length)
    throw new Error(`charge_call returned ${rows.length} rows for ${order.length} calls`);
  const results = new Array<ChargeResult>(order.length);
  rows.forEach((row, position) => {
    results[order[position]!] = toResult(row);
  });
  return results;
}

/** Runs a group of charges in one statement under the given attempt id; results come back in the order given. */
export async function chargeBatch(
  handle: DbHandle,
  requests: ChargeRequest[],
  limits: Limits,
  attemptId: string = uuidV7(),
): Promise<ChargeResult[]> {
  const order = lockOrder(requests);
  const sorted = order.map((i) => requests[i]!);
  const statement = chargeBatchStatement(sorted, limits, attemptId);
  const rows = await handle.prepared<ChargeRow & { ord: number | string }>(statement.text, statement.params);
  return inRequestOrder(rows, order);
}

/**
 * True when a failed statement certainly did not commit: the database refused it with an
 * ordinary SQL error, or no connection could be opened, so it was never sent. Anything else
 * (a connection reset, closed or terminated while the statement was out) leaves the outcome
 * open and must be resolved.
 */
export function certainlyNotCommitted(err: unknown): boolean {
  // Errors from Drizzle's query builder wrap the driver's error as `cause`.
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = typeof e?.code === "string" ? e.code : e?.cause?.code;
  if (typeof code !== "string") return false;
  // SQLSTATE classes 08 (connection), 57 (operator intervention: terminated, shutting down),
  // 58 (system I/O) and XX (internal) can come with the connection going away mid-commit.
  if (/^[0-9A-Z]{5}$/.test(code)) return !/^(08|57|58|XX)/.test(code);
  return [
    "CHARGE_NOT_SENT",
    "ECONNREFUSED",
    "CONNECT_TIMEOUT",
    "ENOTFOUND",
    "EAI_AGAIN",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "CONNECTION_ENDED",
    // Refused by the link watch without being sent (src/db/link-watch.ts).
    "DATABASE_UNREACHABLE",
  ].includes(code);
}

/**
 * Learns whether the attempt committed, fencing it off if it had not: its results (in request
 * order) or null ("not committed, and never will be"). Throws when the database cannot be
 * reached.
 */
export async function resolveAttempt(
  handle: DbHandle,
  attemptId: string,
  requests: ChargeRequest[],
): Promise<ChargeResult[] | null> {
  // If the lost statement is still running, this insert waits for it on the id's index entry.
  const fenced = await handle.prepared(FENCE_SQL, [attemptId]);
  if (fenced.length > 0) return null;
  const [row] = await handle.prepared<{ results: ChargeRow[] | string | null }>(ATTEMPT_SQL, [attemptId]);
  const results = typeof row?.results === "string" ? (JSON.parse(row.results) as ChargeRow[]) : (row?.results ?? null);
  return results === null ? null : inRequestOrder(results, lockOrder(requests));
}

/**
 * Deletes attempt rows older than `olderThanMs` (they only matter for minutes after a fault); `now` is wall time, as in
 * the ids.
 */
export async function purgeChargeAttempts(
  handle: DbHandle,
  now: number = Date.now(),
  olderThanMs = 3600_000,
): Promise<number> {
  // The smallest UUIDv7 of that millisecond: every id below it is older.
  const bound = `${uuidV7(now - olderThanMs).slice(0, 13)}-0000-0000-000000000000`;
  const rows = await handle.prepared(`DELETE FROM charge_attempts WHERE id < $1::uuid RETURNING 1`, [bound]);
  return rows.length;
}

/** Checks the key, plan, subscription, balance and daily cap, and charges 1 Token if all pass. */
export async function chargeCall(
  handle: DbHandle,
  keyHash: string,
  limits: Limits,
  now: number,
): Promise<ChargeResult> {
  const [result] = await chargeBatch(handle, [{ keyHash, now }], limits);
  return result!;
}

/**
 * Charges one call. `signal`: the caller's request; a call whose caller went away while it waited
 * for its turn is dropped before it reaches the database (never charged). `known`: the market
 * versions the answer will be read at (ChargeRequest.known).
 */
export type Charger = (
  keyHash: string,
  now: number,
  signal?: AbortSignal,
  known?: KnownVersions | null,
) => Promise<ChargeResult>;

/** A group refused before its statement was sent: certainly nothing charged. */
export class ChargeNotSent extends Error {
  readonly code = "CHARGE_NOT_SENT";
}

export interface BatcherOptions {
  /**
   * How long callers of a group whose outcome is open wait for the database to answer again
   * (default 10 s). Past it, or as soon as the database is known to be unreachable, they get
   * the statement's error (503), and the attempt is resolved in the background: if it turns out
   * to have committed, each charged call is refunded.
   */
  readonly resolveWithinMs?: number;
  /** Pause between resolution tries while the database is unreachable (default 250 ms). */
  readonly retryEveryMs?: number;
  /**
   * Group statements in flight at once (default 8); later groups wait their turn, at most
   * queueTimeoutMs (default 5 s), then are refused (503) without being sent. Without this bound
   * the driver queued every group while the database was unreachable and ran them all when it
   * came back, charging callers that had long given up.
   */
  readonly maxInFlight?: number;
  readonly queueTimeoutMs?: number;
  /**
   * How long the first call of a group waits for more calls before the group's statement is sent
   * (default 0: the calls of the current turn of the event loop). A statement costs the server
   * about a quarter of a call's CPU (building it, two system calls, a wake-up for the answer,
   * reading it), and calls arriving a millisecond apart rarely share a turn: waiting a few
   * milliseconds lets them share one, trading that much latency for CPU (bench/README.md).
   */
  readonly groupWaitMs?: number;
  readonly logger?: Logger;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

interface PendingCall {
  request: ChargeRequest;
  signal: AbortSignal | undefined;
  resolve: (r: ChargeResult) => void;
  reject: (e: unknown) => void;
}

/** A batcher's settings and its queues. */
interface Batcher {
  readonly handle: DbHandle;
  readonly limits: Limits;
  readonly log: Logger | undefined;
  readonly resolveWithinMs: number;
  readonly retryEveryMs: number;
  readonly maxInFlight: number;
  readonly queueTimeoutMs: number;
  /** Calls of the group being gathered, sent together groupWaitMs after the first (or at the end of its turn). */
  pending: PendingCall[];
  readonly groupWaitMs: number;
  scheduled: boolean;
  inFlight: number;
  /** Groups waiting for a statement slot, oldest first. */
  readonly waiting: { group: PendingCall[]; since: number }[];
}

/**
 * Tries resolveAttempt until it answers or `until` passes (then undefined). `orUntilKnownDown`:
 * also give up as soon as the database is known to be unreachable (the link watch refused the
 * try, src/db/link-watch.ts): waiting callers are then answered at once, not at `until`.
 */
async function resolveUntil(
  b: Batcher,
  attemptId: string,
  requests: ChargeRequest[],
  until: number,
  every = b.retryEveryMs,
  orUntilKnownDown = false,
): Promise<ChargeResult[] | null | undefined> {
  for (;;) {
    try {
      return await resolveAttempt(b.handle, attemptId, requests);
    } catch {
      if (Date.now() + every > until || (orUntilKnownDown && b.handle.link().down)) return undefined;
      await sleep(every);
    }
  }
}

/**
 * After the callers were answered 503: learn whether the attempt committed after all, and refund its charges if it did.
 */
async function refundIfCommittedLate(b: Batcher, attemptId: string, requests: ChargeRequest[]): Promise<void> {
  const results = await resolveUntil(
    b,
    attemptId,
    requests,
    Date.now() + 24 * 3600_000,
    Math.max(b.retryEveryMs, 1000),
  );
  if (results === undefined || results === null) return;
  const charged = results.filter((r) => r.outcome === "ok" && r.accountId !== null);
  for (const r of charged) {
    await adjustTokens(
      b.handle,
      r.accountId!,
      "adjustment",
      1,
      `refund: call answered 503 after a database fault (attempt ${attemptId})`,
      b.limits,
    );
  }
  b.log?.error({ attemptId, refunded: charged.length }, "charges of calls answered 503 committed after all; refunded");
}

const answer = (group: PendingCall[], results: ChargeResult[]) => {
  for (const [i, g] of group.entries()) g.resolve(results[i]!);
};
const refuse = (group: PendingCall[], err: unknown) => {
  for (const g of group) g.reject(err);
};

/**
 * A statement failed: refused outright when it certainly did not commit; otherwise its callers
 * wait (up to resolveWithinMs) to learn whether it did, and past that get 503 while the attempt
 * is resolved in the background.
 */
async function afterFailure(b: Batcher, group: PendingCall[], attemptId: string, err: unknown): Promise<void> {
  if (certainlyNotCommitted(err)) return refuse(group, err);
  const requests = group.map((g) => g.request);
  const results = await resolveUntil(b, attemptId, requests, Date.now() + b.resolveWithinMs, b.retryEveryMs, true);
  if (results) return answer(group, results);
  refuse(group, err);
  if (results === undefined) {
    b.log?.warn(
      { attemptId, calls: requests.length, err: errorSummary(err) },
      "charge outcome unknown; answered 503, resolving in the background",
    );
    refundIfCommittedLate(b, attemptId, requests).catch((e: unknown) =>
      b.log?.error({ attemptId, err: errorSummary(e) }, "charge attempt could not be resolved"),
    );
  }
}

function send(b: Batcher, group: PendingCall[]): void {
  b.inFlight++;
  const attemptId = uuidV7();
  const done = () => {
    b.inFlight--;
    sendWaiting(b);
  };
  chargeBatch(
    b.handle,
    group.map((g) => g.request),
    b.limits,
    attemptId,
  ).then(
    (results) => {
      done();
      answer(group, results);
    },
    (err: unknown) => {
      done();
      return afterFailure(b, group, attemptId, err);
    },
  );
}

/** Drops calls whose caller is gone; refuses the rest if they waited too long. */
function live(b: Batcher, group: PendingCall[], since: number): PendingCall[] {
  // The errors are built only when needed: an Error's stack trace costs more than the rest of a group's bookkeeping.
  const kept: PendingCall[] = [];
  for (const g of group) {
    if (g.signal?.aborted) g.reject(new ChargeNotSent("the caller went away before the charge was sent"));
    else kept.push(g);
  }
  if (Date.now() - since <= b.queueTimeoutMs) return kept;
  const late = new ChargeNotSent("the database did not take the charge in time");
  for (const g of kept) g.reject(late);
  return [];
}

/** Sends waiting groups while statement slots are free. */
function sendWaiting(b: Batcher): void {
  while (b.inFlight < b.maxInFlight && b.waiting.length > 0) {
    const { group, since } = b.waiting.shift()!;
    const kept = live(b, group, since);
    if (kept.length > 0) send(b, kept);
  }
}

/** Sends this turn's calls as one group, or queues the group when every slot is taken. */
function flush(b: Batcher): void {
  b.scheduled = false;
  const group = b.pending;
  b.pending = [];
  if (group.length === 0) return;
  const now = Date.now();
  if (b.inFlight < b.maxInFlight && b.waiting.length === 0) {
    const kept = live(b, group, now);
    if (kept.length > 0) send(b, kept);
    return;
  }
  b.waiting.push({ group, since: now });
  // A queued group is refused at its deadline even if no statement finishes before it.
  setTimeout(() => {
    const at = b.waiting.findIndex((w) => w.group === group);
    if (at >= 0) live(b, b.waiting.splice(at, 1)[0]!.group, now - b.queueTimeoutMs - 1);
  }, b.queueTimeoutMs + 1).unref();
}

/**
 * Groups the calls that arrive within groupWaitMs of a group's first call (or, with 0, in the same
 * turn of the event loop), up to MAX_BATCH, into one chargeBatch. Several groups may be in flight
 * at once, each on its own pool connection.
 */
export function createChargeBatcher(handle: DbHandle, limits: Limits, options: BatcherOptions = {}): Charger {
  const b: Batcher = {
    handle,
    limits,
    log: options.logger,
    resolveWithinMs: options.resolveWithinMs ?? 10_000,
    retryEveryMs: options.retryEveryMs ?? 250,
    maxInFlight: options.maxInFlight ?? 8,
    queueTimeoutMs: options.queueTimeoutMs ?? 5_000,
    pending: [],
    groupWaitMs: options.groupWaitMs ?? 0,
    scheduled: false,
    inFlight: 0,
    waiting: [],
  };
  return (keyHash, now, signal, known) =>
    new Promise<ChargeResult>((resolve, reject) => {
      b.pending.push({ request: { keyHash, now, known: known ?? null }, signal, resolve, reject });
      if (b.pending.length >= MAX_BATCH) flush(b);
      else if (!b.scheduled) {
        b.scheduled = true;
        if (b.groupWaitMs > 0) setTimeout(flush, b.groupWaitMs, b);
        else setImmediate(flush, b);
      }
    });
}
