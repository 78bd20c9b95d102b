/**
 * The web layer's hono environment and what it is built over: its dependencies, the signed-in
 * member a route sees, and the per-request values the middlewares leave.
 */

import type { Http2Bindings, HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import type { Logger } from "pino";
import type { AccountSummary } from "../accounts/accounts.ts";
import type { SignInPolicy } from "../accounts/attempt-throttle.ts";
import type { HashGate, HashOutcome } from "../accounts/sign-in/hash-gate.ts";
import type { WebSession } from "../accounts/sign-in/sessions.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import type { SignalSnapshot } from "../market/snapshot.ts";
import type { Timeframe } from "../market/timeframes.ts";
import type { PageContext } from "./auth-pages.ts";

export interface WebDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Failed sign-in budget (tests may pass a smaller one). */
  readonly throttle?: SignInPolicy;
  /** The process's password hashing queue (tests may pass their own). */
  readonly hashGate?: HashGate;
  /** Told each outcome of the password hashing queue (the server counts them in a metric). */
  readonly onPasswordHash?: (outcome: HashOutcome) => void;
  /** The current readings (what a paid call reads); the live watchlist shows them. Absent: no watchlist. */
  readonly snapshot?: SignalSnapshot;
  /** Wakes the live watchlists when the readings change (events/event-hub.ts's SignalEventHub). */
  readonly readings?: WakeupHub;
  /** Told each time a series' chart data and track record are computed (the server counts them in a metric). */
  readonly onTrackRecordComputed?: (symbol: string, tf: Timeframe) => void;
}

/** A wake-up counter to wait on (the server's SignalEventHub, named by shape: web/ does not import events/). */
export interface WakeupHub {
  readonly wakeups: number;
  readonly closed: boolean;
  wait(since: number, signal: AbortSignal, timeoutMs: number): Promise<void>;
}

/** A signed-in member: their session, account summary and the context their pages render in. */
export interface Signed {
  readonly session: WebSession;
  readonly summary: AccountSummary;
  readonly ctx: PageContext & { signedIn: { email: string; csrfToken: string } };
}

/** The hono environment of the web pages: Node's request (for the socket) and per-request values. */
export interface WebEnv {
  Bindings: HttpBindings | Http2Bindings;
  Variables: {
    /** Set by `kit.session` (or `kit.memberForm`) on the routes that need it. */
    signed: Signed | null;
    /** Set by `kit.anonymousForm` and `kit.memberForm` on POST routes. */
    form: URLSearchParams;
  };
}
export type WebContext = Context<WebEnv>;
