-- charge_call: the readable source of the function in force (last set by migration 0033; 0001, 0004 and
-- 0006 hold earlier versions that no longer run).
-- A change here ships as a new custom migration made from this file (see src/db/functions/README.md);
-- test/integration/db-functions.test.ts fails while the migrated database and this file differ.
--
-- The whole check-and-charge of one paid call. Checks run in the contract's order; only the
-- 'ok' outcome changes balances (one 'charge' ledger row; the day's count on the account row).
-- The paid plans ('node', 'founding_seat') are PAID_PLANS in src/accounts/entitlement.ts, and the
-- channel 'outbox_ready' is OUTBOX_READY in src/db/channels.ts (a test compares them).
-- A charge that takes credits_left below the low-balance threshold writes the member's notice
-- to the outbox in the same transaction (one row per crossing; the flag re-arms when a grant,
-- pack or adjustment takes the balance back to the threshold).
CREATE OR REPLACE FUNCTION charge_call(
  p_key_hash text, p_now timestamptz, p_day date, p_month date,
  p_daily_cap integer, p_grant bigint, p_low_threshold bigint)
RETURNS TABLE (outcome text, account_id bigint, plan text, credits_left bigint, calls_today integer, low_balance_crossed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_account_id bigint;
  v accounts%ROWTYPE;
  v_calls integer;
  v_grant_delta bigint;
  v_pack_delta bigint;
  v_was_notified boolean;
BEGIN
  SELECT k.account_id INTO v_account_id FROM api_keys k WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'invalid_api_key'::text, NULL::bigint, NULL::text, NULL::bigint, NULL::integer, false;
    RETURN;
  END IF;
  -- NO KEY UPDATE, not UPDATE: it serializes charges of one account all the same, but leaves
  -- the KEY SHARE locks of foreign keys alone, so a market transaction queueing alerts (its
  -- outbox rows reference many accounts, in event order) never waits for a charge, and the
  -- two can no longer deadlock (the market's whole batch was lost to one at a boundary).
  SELECT * INTO v FROM accounts a WHERE a.id = v_account_id FOR NO KEY UPDATE;
  -- Re-check after the lock: a regeneration that committed while we waited wins.
  PERFORM 1 FROM api_keys k WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'invalid_api_key'::text, NULL::bigint, NULL::text, NULL::bigint, NULL::integer, false;
    RETURN;
  END IF;
  v_calls := CASE WHEN v.usage_day = p_day THEN v.calls_today ELSE 0 END;
  IF v.plan NOT IN ('node', 'founding_seat') THEN
    RETURN QUERY SELECT 'node_tier_required'::text, v.id, v.plan, v.grant_balance + v.pack_balance, v_calls, false;
    RETURN;
  END IF;
  IF v.subscription_until IS NULL OR v.subscription_until <= p_now THEN
    RETURN QUERY SELECT 'subscription_inactive'::text, v.id, v.plan, v.grant_balance + v.pack_balance, v_calls, false;
    RETURN;
  END IF;
  IF v.grant_month IS NULL OR v.grant_month < p_month THEN
    PERFORM apply_monthly_grant(v.id, p_month, p_grant, p_low_threshold);
    SELECT * INTO v FROM accounts a WHERE a.id = v.id;
  END IF;
  IF v.grant_balance + v.pack_balance < 1 THEN
    RETURN QUERY SELECT 'insufficient_credits'::text, v.id, v.plan, 0::bigint, v_calls, false;
    RETURN;
  END IF;
  IF v_calls >= p_daily_cap THEN
    RETURN QUERY SELECT 'rate_limited'::text, v.id, v.plan, v.grant_balance + v.pack_balance, v_calls, false;
    RETURN;
  END IF;
  -- The grant is spent before packs: packs never expire, grants do.
  IF v.grant_balance >= 1 THEN
    v_grant_delta := -1; v_pack_delta := 0;
  ELSE
    v_grant_delta := 0; v_pack_delta := -1;
  END IF;
  v_was_notified := v.low_balance_notified;
  UPDATE accounts a
     SET grant_balance = a.grant_balance + v_grant_delta,
         pack_balance = a.pack_balance + v_pack_delta,
         usage_day = p_day,
         calls_today = v_calls + 1,
         low_balance_notified = (a.grant_balance + a.pack_balance - 1) < p_low_threshold
   WHERE a.id = v.id
  RETURNING * INTO v;
  INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after)
  VALUES (v.id, 'charge', v_grant_delta, v_pack_delta, v.grant_balance, v.pack_balance);
  -- The notice is part of the charge that crossed the threshold: same transaction, so a charge
  -- that rolls back leaves no notice and a committed crossing always has exactly one.
  IF v.low_balance_notified AND NOT v_was_notified THEN
    INSERT INTO outbox (kind, account_id, chat_id, payload)
    SELECT 'low_balance', v.id, s.chat_id,
           jsonb_build_object('credits_left', v.grant_balance + v.pack_balance, 'threshold', p_low_threshold)
      FROM (SELECT 1) one LEFT JOIN alert_settings s ON s.account_id = v.id;
    PERFORM pg_notify('outbox_ready', '');
  END IF;
  RETURN QUERY SELECT 'ok'::text, v.id, v.plan, v.grant_balance + v.pack_balance, v.calls_today,
    (v.low_balance_notified AND NOT v_was_notified);
END $$;
