-- Money moves only through these functions. Each runs as one statement from the client, so
-- every check-and-charge is one transaction and one round trip, serialised per account by
-- the account row lock (exact under any concurrency: no overspend, no lost or double count).

-- The ledger is append-only: corrections are new 'adjustment' rows, never edits.
CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only';
END $$;
--> statement-breakpoint
CREATE TRIGGER ledger_entries_no_update_delete BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only();
--> statement-breakpoint
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only();
--> statement-breakpoint
-- Resets the grant bucket to p_grant when it belongs to an earlier MYT month (lazy monthly
-- grant): unused grant is written off as an 'expiry' row, the new grant as a 'grant' row.
-- Only node / founding_seat accounts receive grants. Caller must hold no assumptions about
-- the row: this function takes the account row lock itself.
CREATE FUNCTION apply_monthly_grant(p_account_id bigint, p_month date, p_grant bigint, p_low_threshold bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v accounts%ROWTYPE;
BEGIN
  SELECT * INTO v FROM accounts a WHERE a.id = p_account_id FOR UPDATE;
  IF NOT FOUND OR v.plan NOT IN ('node', 'founding_seat') THEN
    RETURN;
  END IF;
  IF v.grant_month IS NOT NULL AND v.grant_month >= p_month THEN
    RETURN;
  END IF;
  IF v.grant_balance > 0 THEN
    INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason)
    VALUES (v.id, 'expiry', -v.grant_balance, 0, 0, v.pack_balance,
            'unused grant of ' || to_char(v.grant_month, 'YYYY-MM') || ' expired');
  END IF;
  INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason)
  VALUES (v.id, 'grant', p_grant, 0, p_grant, v.pack_balance, 'monthly grant ' || to_char(p_month, 'YYYY-MM'));
  UPDATE accounts a
     SET grant_balance = p_grant,
         grant_month = p_month,
         low_balance_notified = a.low_balance_notified AND (p_grant + a.pack_balance) < p_low_threshold
   WHERE a.id = v.id;
END $$;
--> statement-breakpoint
-- The whole check-and-charge of one paid call. Checks run in the contract's order; only the
-- 'ok' outcome changes balances (one 'charge' ledger row, one daily_usage increment).
CREATE FUNCTION charge_call(
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
  SELECT * INTO v FROM accounts a WHERE a.id = v_account_id FOR UPDATE;
  -- Re-check after the lock: a regeneration that committed while we waited wins.
  PERFORM 1 FROM api_keys k WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'invalid_api_key'::text, NULL::bigint, NULL::text, NULL::bigint, NULL::integer, false;
    RETURN;
  END IF;
  SELECT coalesce((SELECT u.calls FROM daily_usage u WHERE u.account_id = v.id AND u.day = p_day), 0) INTO v_calls;
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
         low_balance_notified = (a.grant_balance + a.pack_balance - 1) < p_low_threshold
   WHERE a.id = v.id
  RETURNING * INTO v;
  INSERT INTO daily_usage AS u (account_id, day, calls) VALUES (v.id, p_day, 1)
  ON CONFLICT ON CONSTRAINT daily_usage_account_id_day_pk DO UPDATE SET calls = u.calls + 1
  RETURNING u.calls INTO v_calls;
  INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after)
  VALUES (v.id, 'charge', v_grant_delta, v_pack_delta, v.grant_balance, v.pack_balance);
  RETURN QUERY SELECT 'ok'::text, v.id, v.plan, v.grant_balance + v.pack_balance, v_calls,
    (v.low_balance_notified AND NOT v_was_notified);
END $$;
--> statement-breakpoint
-- Pack credits and manual adjustments. A positive delta goes to the pack bucket (it never
-- expires); a negative one is taken from the grant first, then packs. Refused, changing
-- nothing, when it would take the balance below zero.
CREATE FUNCTION ledger_adjust(p_account_id bigint, p_kind text, p_delta bigint, p_reason text, p_low_threshold bigint)
RETURNS TABLE (outcome text, grant_balance bigint, pack_balance bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v accounts%ROWTYPE;
  v_grant_delta bigint;
  v_pack_delta bigint;
BEGIN
  SELECT * INTO v FROM accounts a WHERE a.id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  IF p_delta >= 0 THEN
    v_grant_delta := 0; v_pack_delta := p_delta;
  ELSIF v.grant_balance + v.pack_balance + p_delta < 0 THEN
    RETURN QUERY SELECT 'insufficient_credits'::text, v.grant_balance, v.pack_balance;
    RETURN;
  ELSE
    v_grant_delta := -least(v.grant_balance, -p_delta);
    v_pack_delta := p_delta - v_grant_delta;
  END IF;
  UPDATE accounts a
     SET grant_balance = a.grant_balance + v_grant_delta,
         pack_balance = a.pack_balance + v_pack_delta,
         low_balance_notified = a.low_balance_notified
           AND (a.grant_balance + v_grant_delta + a.pack_balance + v_pack_delta) < p_low_threshold
   WHERE a.id = v.id
  RETURNING * INTO v;
  INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason)
  VALUES (v.id, p_kind, v_grant_delta, v_pack_delta, v.grant_balance, v.pack_balance, p_reason);
  RETURN QUERY SELECT 'ok'::text, v.grant_balance, v.pack_balance;
END $$;
