/**
 * "Throttle, then a 429": the attempt budgets (accounts/attempt-throttle.ts) and the password
 * hashing queue (accounts/sign-in/hash-gate.ts) as the forms answer them, a Refusal saying when
 * to try again.
 */

import { type Budget, reserveAttempt, sweepExpired, type ThrottlePolicy } from "../accounts/attempt-throttle.ts";
import { type HashGate, HashRefused } from "../accounts/sign-in/hash-gate.ts";
import type { DbHandle } from "../db/client.ts";
import type { Refusal } from "./responses.ts";

/** "3 minutes": a wait in whole minutes, for a 429 page. */
export function minutesText(waitMs: number): string {
  const minutes = Math.ceil(waitMs / 60_000);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

/** The Retry-After header of a wait. */
function retryAfter(waitMs: number): Record<string, string> {
  return { "retry-after": String(Math.ceil(waitMs / 1000)) };
}

/** The 429 of a full budget: `what` says which ("Too many sign-ups from your network."). */
export function tooManyAttempts(what: string, waitMs: number): Refusal {
  return {
    refused: true,
    status: 429,
    message: `${what} Try again in ${minutesText(waitMs)}.`,
    headers: retryAfter(waitMs),
  };
}

/**
 * Reserves one attempt on `budgets` (all or none): null when reserved, after sweeping the
 * policy's expired counters; else the 429 saying when to try again.
 */
export async function reserveOrRefuse(
  db: DbHandle,
  budgets: readonly Budget[],
  policy: ThrottlePolicy,
  now: number,
  what: string,
): Promise<Refusal | null> {
  const waitMs = await reserveAttempt(db, budgets, policy.windowMs, now);
  if (waitMs > 0) return tooManyAttempts(what, waitMs);
  await sweepExpired(db, policy, now);
  return null;
}

/** Hashes a password through the queue (the work's `hash` argument). */
export type QueuedHash = <H>(step: () => Promise<H>) => Promise<H>;

/**
 * Runs `work` holding the client address's place in the hashing queue. A refusal comes back as
 * the Refusal the route's form page shows: 429 while the same address has a password check
 * running, 503 while the queue is full.
 */
export async function withHashPlace<T>(
  gate: HashGate,
  address: string,
  signal: AbortSignal,
  work: (hash: QueuedHash) => Promise<T>,
): Promise<T | Refusal> {
  try {
    const ticket = gate.enter(address, signal);
    try {
      return await work((step) => ticket.hash(step));
    } finally {
      ticket.leave();
    }
  } catch (err) {
    if (!(err instanceof HashRefused)) throw err;
    return err.reason === "address_busy"
      ? {
          refused: true,
          status: 429,
          message: "Another sign-in from your network is being checked. Try again in a second.",
          headers: { "retry-after": "1" },
        }
      : {
          refused: true,
          status: 503,
          message: "Too many password checks are waiting. Try again in a few seconds.",
          headers: { "retry-after": "3" },
        };
  }
}
