/**
 * The read behind GET /api/v1/usage: ONE statement that runs the free endpoints' access check
 * (`free_call`: key, subscription, the key's free calls of the minute) and reads the account
 * the key belongs to. It writes nothing but the free-call window: balances, the ledger and the
 * daily cap are only read.
 *
 * The monthly grant is applied lazily, at the first charge of a MYT month. Usage reports the
 * balance as that charge will find it: when the grant bucket belongs to an earlier month (and the
 * plan receives grants), `grant_credits` is the new month's grant, computed here, not written.
 * So the next paid call answers `credits_left` = usage's `credits_left` − 1.
 */

import { PAID_PLANS } from "../accounts/entitlement.ts";
import { mytDay, mytMonth } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import type { FreeCallResult } from "./free-call.ts";

export interface UsageRow {
  readonly plan: string;
  readonly subscriptionUntil: number | null;
  readonly grantTokens: number;
  readonly packTokens: number;
  readonly callsToday: number;
  /** True when the plan receives the monthly grant (node, founding_seat). */
  readonly receivesGrant: boolean;
}

export interface UsageRead {
  readonly access: FreeCallResult;
  /** The account, when the access check admitted the call. */
  readonly usage: UsageRow | null;
}

// The LEFT JOINs read the account only for an admitted call; free_call runs once (a function
// scan), before the joins.
const USAGE_SQL = `
SELECT f.outcome, f.calls, f.window_start,
       a.plan, a.subscription_until,
       CASE WHEN a.plan = ANY($5::text[]) AND (a.grant_month IS NULL OR a.grant_month < $6::date)
            THEN $7::bigint ELSE a.grant_balance END AS grant_tokens,
       a.pack_balance AS pack_tokens,
       CASE WHEN a.usage_day = $8::date THEN a.calls_today ELSE 0 END AS calls_today,
       a.plan = ANY($5::text[]) AS receives_grant
  FROM free_call($1::text, $2::timestamptz, $3::integer, $4::integer) f
  LEFT JOIN api_keys k ON f.outcome = 'ok' AND k.key_hash = $1::text AND k.revoked_at IS NULL
  LEFT JOIN accounts a ON a.id = k.account_id`;

interface RawUsage {
  outcome: FreeCallResult["outcome"];
  calls: number | string | null;
  window_start: string | Date | null;
  plan: string | null;
  subscription_until: string | Date | null;
  grant_tokens: number | string | null;
  pack_tokens: number | string | null;
  calls_today: number | string | null;
  receives_grant: boolean | null;
}

const epoch = (v: string | Date | null) => (v === null ? null : new Date(v).getTime());

/** Checks access, counts the free call and reads the caller's usage, in one round trip. */
export async function readUsage(
  handle: DbHandle,
  keyHash: string,
  now: number,
  freeLimit: number,
  windowMs: number,
  monthlyGrant: number,
): Promise<UsageRead> {
  const [row] = await handle.prepared<RawUsage>(USAGE_SQL, [
    keyHash,
    new Date(now).toISOString(),
    freeLimit,
    windowMs,
    [...PAID_PLANS],
    mytMonth(now),
    monthlyGrant,
    mytDay(now),
  ]);
  if (!row) throw new Error("usage query returned no row");
  const access: FreeCallResult = {
    outcome: row.outcome,
    calls: row.calls === null ? null : Number(row.calls),
    windowStart: epoch(row.window_start),
  };
  const usage: UsageRow | null =
    row.outcome === "ok" && row.plan !== null
      ? {
          plan: row.plan,
          subscriptionUntil: epoch(row.subscription_until),
          grantTokens: Number(row.grant_tokens),
          packTokens: Number(row.pack_tokens),
          callsToday: Number(row.calls_today),
          receivesGrant: row.receives_grant === true,
        }
      : null;
  return { access, usage };
}
