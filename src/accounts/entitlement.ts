/**
 * Who sees what: the one entitlement rule of the service, a pure function of the viewer's plan,
 * subscription state and the surface asked for. The product is the current signal, whether it
 * is confirmed, its defense and the forming (arming) setup; it reaches a person only through a
 * charged call of the paid endpoint, that member's own alerts, or the web pages of an account
 * that may call the paid endpoint right now. Everyone else sees price history and the history
 * of signals that have ended, at least ENDED_SIGNAL_DELAY_MS ago (docs/accounts.md, "Who sees
 * what"). Every surface asks this module; none restates the rule.
 *
 * The SQL that enforces the same rule inside one statement (charge_call's plan and subscription
 * checks, free_call's subscription check, the alert queue's plan filter) names PAID_PLANS and
 * compares `subscription_until > now` as subscriptionState does; tests run them against this table.
 */

/** The plans that may call the paid endpoint (and so see the current signal anywhere). */
export const PAID_PLANS = ["node", "founding_seat"] as const;

/** `active`: paid until a moment after now; `lapsed`: that moment has passed; `none`: never subscribed. */
export type SubscriptionState = "active" | "lapsed" | "none";

/** A person asking: null when signed out (or with no account at all). */
export type Viewer = { readonly plan: string; readonly subscription: SubscriptionState } | null;

/**
 * Every place the service shows something to a person:
 * - `paid_endpoint`: GetSignals over REST, Connect, gRPC and gRPC-Web (charged);
 * - `free_endpoints`: movers, derivatives, news, macro, fundamentals and usage;
 * - `alerts`: the member's own signal alerts in the message app;
 * - `test_alert`: the account page's "Send a test alert";
 * - `chart_page`: `/charts/<SYMBOL>` (and the `/charts` list);
 * - `watchlist`: `/watch`, the member's live grid of current signals (pushed, not charged);
 * - `track_record`: the public `/track-record`;
 * - `status_page`: the public `/status`.
 */
export const SURFACES = [
  "paid_endpoint",
  "free_endpoints",
  "alerts",
  "test_alert",
  "chart_page",
  "watchlist",
  "track_record",
  "status_page",
] as const;
export type Surface = (typeof SURFACES)[number];

export interface Entitlement {
  /** The surface serves this viewer at all (otherwise it refuses, or sends to sign-in). */
  readonly admitted: boolean;
  /** The current signal, `confirmed`, `defense` and `arming` reach this viewer there. */
  readonly currentSignal: boolean;
}

/**
 * How old a signal's end must be before a viewer without current access sees that signal
 * (and before the history they see moves past it): 24 hours.
 */
export const ENDED_SIGNAL_DELAY_MS = 24 * 3_600_000;

/** The state of a subscription ending at `until` (null: never subscribed) at `now`; the end itself is lapsed. */
export function subscriptionState(until: Date | number | null, now: number): SubscriptionState {
  if (until === null) return "none";
  return (typeof until === "number" ? until : until.getTime()) > now ? "active" : "lapsed";
}

/** The viewer of an account with this plan and subscription end, at `now`. */
export function viewerOf(
  account: { readonly plan: string; readonly subscriptionUntil: Date | null },
  now: number,
): NonNullable<Viewer> {
  return { plan: account.plan, subscription: subscriptionState(account.subscriptionUntil, now) };
}

/** The plan is one of PAID_PLANS. */
export function isPaidPlan(plan: string): boolean {
  return (PAID_PLANS as readonly string[]).includes(plan);
}

/**
 * May call the paid endpoint right now: a paid plan with an active subscription (Tokens are billing, not entitlement).
 */
export function mayCallPaidEndpoint(viewer: Viewer): boolean {
  return viewer !== null && isPaidPlan(viewer.plan) && viewer.subscription === "active";
}

/** What `viewer` gets on `surface`. */
export function entitlement(viewer: Viewer, surface: Surface): Entitlement {
  const paid = mayCallPaidEndpoint(viewer);
  switch (surface) {
    case "paid_endpoint":
    case "alerts":
    case "watchlist":
      // The watchlist is current signals and nothing else: only for those who may call the API.
      return { admitted: paid, currentSignal: paid };
    case "test_alert":
      // A test alert carries no signal; it is offered to the accounts whose plan has alerts.
      return { admitted: paid, currentSignal: false };
    case "free_endpoints":
      // Any plan with an active subscription; market context only, never a current signal.
      return { admitted: viewer !== null && viewer.subscription === "active", currentSignal: false };
    case "chart_page":
      // Members of any plan see price history and ended signals; the current signal needs a paid plan.
      return { admitted: viewer !== null, currentSignal: paid };
    case "track_record":
    case "status_page":
      // Public pages: the same for everyone, so never a current signal.
      return { admitted: true, currentSignal: false };
  }
}

/**
 * The moment up to which a viewer without current access sees a series' signal history, from
 * the times its signals came into force (the close of the candle that set each, in time order):
 * just before the signal that was in force ENDED_SIGNAL_DELAY_MS ago (or that moment itself
 * when no signal was in force then). Every signal that came into force by then ended at least
 * the delay ago, whether or not the one after it is still in force; and the cutoff depends on
 * nothing newer than the delay, so no later signal shows through it.
 */
export function endedHistoryUntil(now: number, inForceTimes: readonly number[]): number {
  const horizon = now - ENDED_SIGNAL_DELAY_MS;
  let inForceAtHorizon: number | null = null;
  for (const time of inForceTimes) {
    if (time > horizon) break;
    inForceAtHorizon = time;
  }
  return inForceAtHorizon === null ? horizon : inForceAtHorizon - 1;
}
