/**
 * Members' signal alerts, queued from what the market commits: subscribed to the market feed's
 * stored signal events, inside the same transaction, so a committed live event always has its
 * outbox rows and a rolled-back one has none. One row per (event, member whose settings name
 * the coin and timeframe, who has a chat connected and whose plan has alerts), in event order.
 * "Has alerts" is the entitlement rule's (accounts/entitlement.ts): a paid plan with an active
 * subscription, written here as SQL over PAID_PLANS and the same `subscription_until > now`.
 */
import { sql } from "drizzle-orm";
import { PAID_PLANS } from "../accounts/entitlement.ts";
import { OUTBOX_READY } from "../db/channels.ts";
import { resultRows } from "../db/client.ts";
import type { SignalEventsSubscriber } from "../market/store.ts";

/** Queues the alerts of the live events the market just stored, and wakes the delivery worker on commit. */
export const queueSignalAlerts: SignalEventsSubscriber = async (tx, stored, now) => {
  const live = stored.filter((e) => e.live);
  if (live.length === 0) return;
  const [counts] = resultRows<{ queued: number }>(
    await tx.execute(sql`
    WITH queued AS (
      INSERT INTO outbox (kind, account_id, chat_id, event_id)
      SELECT 'signal_alert', s.account_id, s.chat_id, e.id
        FROM unnest(${sql.param(live.map((e) => e.id))}::text[], ${sql.param(live.map((e) => e.symbol))}::text[],
        ${sql.param(live.map((e) => e.tf))}::text[],
                    ${sql.param(live.map((e) => e.seq))}::bigint[]) AS e(id, symbol, tf, seq)
        JOIN alert_settings s ON e.symbol = ANY (s.symbols) AND e.tf = ANY (s.timeframes) AND s.chat_id IS NOT NULL
        JOIN accounts a ON a.id = s.account_id
       WHERE a.plan = ANY (${sql.param([...PAID_PLANS])}::text[])
       AND a.subscription_until > ${new Date(now).toISOString()}::timestamptz
       ORDER BY e.seq, s.account_id
      RETURNING 1)
    SELECT count(*)::int AS queued FROM queued`),
  );
  if (Number(counts?.queued ?? 0) > 0) await tx.execute(sql`SELECT pg_notify(${OUTBOX_READY}, '')`);
};
