-- Stripe payments (issue 13). Sources: src/db/functions/stripe_*.sql, one function a file.
-- Records a Stripe event as processed, inside the caller's transaction; false when it already
-- was (a replay or a duplicate: the caller then changes nothing). A concurrent duplicate waits
-- on the event id's index entry until the first transaction ends.
CREATE FUNCTION stripe_record_event(p_event_id text, p_type text, p_event_created timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stripe_events (event_id, type, event_created, outcome) VALUES (p_event_id, p_type, p_event_created, 'applied')
  ON CONFLICT (event_id) DO NOTHING;
  RETURN FOUND;
END $$;
--> statement-breakpoint
-- Credits a Token pack bought through Stripe Checkout, once. One statement, one transaction:
-- the processed-event record (keyed by the Stripe event id), the payment row (unique per
-- Checkout Session, so `checkout.session.completed` and `async_payment_succeeded` of the same
-- session cannot both credit), the pack bucket, the ledger row and the low-balance re-arm.
-- A duplicate delivery waits on the event id's index entry until the first commits, then
-- changes nothing.
CREATE FUNCTION stripe_credit_pack(
  p_event_id text, p_type text, p_event_created timestamptz, p_account_id bigint, p_tokens bigint,
  p_session_id text, p_payment_intent_id text, p_amount bigint, p_currency text, p_reason text, p_low_threshold bigint)
RETURNS TABLE (outcome text, ledger_entry_id bigint, grant_balance bigint, pack_balance bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v accounts%ROWTYPE;
  v_payment_id bigint;
  v_ledger_id bigint;
BEGIN
  IF NOT stripe_record_event(p_event_id, p_type, p_event_created) THEN
    RETURN QUERY SELECT 'duplicate_event'::text, NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  SELECT * INTO v FROM accounts a WHERE a.id = p_account_id FOR UPDATE;
  IF NOT FOUND OR p_tokens < 1 THEN
    UPDATE stripe_events e SET outcome = 'unmatched' WHERE e.event_id = p_event_id;
    RETURN QUERY SELECT 'unmatched'::text, NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  INSERT INTO payments (account_id, kind, stripe_event_id, checkout_session_id, payment_intent_id, amount, currency, tokens)
  VALUES (v.id, 'pack', p_event_id, p_session_id, p_payment_intent_id, p_amount, p_currency, p_tokens)
  ON CONFLICT (checkout_session_id) WHERE kind = 'pack' DO NOTHING
  RETURNING id INTO v_payment_id;
  IF v_payment_id IS NULL THEN
    UPDATE stripe_events e SET outcome = 'duplicate_object' WHERE e.event_id = p_event_id;
    RETURN QUERY SELECT 'duplicate_session'::text, NULL::bigint, v.grant_balance, v.pack_balance;
    RETURN;
  END IF;
  UPDATE accounts a
     SET pack_balance = a.pack_balance + p_tokens,
         low_balance_notified = a.low_balance_notified AND (a.grant_balance + a.pack_balance + p_tokens) < p_low_threshold
   WHERE a.id = v.id
  RETURNING * INTO v;
  INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason)
  VALUES (v.id, 'pack', 0, p_tokens, v.grant_balance, v.pack_balance, p_reason)
  RETURNING id INTO v_ledger_id;
  UPDATE payments p SET ledger_entry_id = v_ledger_id WHERE p.id = v_payment_id;
  RETURN QUERY SELECT 'credited'::text, v_ledger_id, v.grant_balance, v.pack_balance;
END $$;
--> statement-breakpoint
-- Applies one Stripe subscription fact (a paid invoice, a subscription state, a deletion, a
-- completed subscription Checkout) once, keyed by the event id, in one transaction. Each field
-- of stripe_subscriptions only moves forward by the objects' own timestamps (paid_through: the
-- latest paid period end; plan/status: the newest state by p_version; ended_at: set once), so
-- events applied in any order converge. The account's subscription_until is then derived from
-- all its subscriptions: paid period end plus grace, but never past a deletion's end. Its plan
-- follows the subscription that runs longest (a deletion keeps the plan). A paid plan gets the
-- month's grant at once when it has not had it (a new subscriber starts with the full grant).
CREATE FUNCTION stripe_subscription_event(
  p_event_id text, p_type text, p_event_created timestamptz, p_account_id bigint,
  p_subscription_id text, p_customer_id text, p_plan text, p_version timestamptz, p_status text,
  p_paid_through timestamptz, p_ended_at timestamptz,
  p_invoice_id text, p_amount bigint, p_currency text,
  p_grace_ms bigint, p_now timestamptz, p_month date, p_grant bigint, p_low_threshold bigint)
RETURNS TABLE (outcome text, plan text, subscription_until timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v accounts%ROWTYPE;
  v_until timestamptz;
  v_plan text;
BEGIN
  IF NOT stripe_record_event(p_event_id, p_type, p_event_created) THEN
    RETURN QUERY SELECT 'duplicate_event'::text, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  SELECT * INTO v FROM accounts a WHERE a.id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    UPDATE stripe_events e SET outcome = 'unmatched' WHERE e.event_id = p_event_id;
    RETURN QUERY SELECT 'unmatched'::text, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  INSERT INTO stripe_subscriptions AS s (subscription_id, account_id, customer_id, plan, plan_version, status, paid_through, ended_at)
  VALUES (p_subscription_id, v.id, p_customer_id, p_plan, p_version, p_status, p_paid_through, p_ended_at)
  ON CONFLICT (subscription_id) DO UPDATE SET
    customer_id = coalesce(s.customer_id, excluded.customer_id),
    plan = CASE WHEN excluded.plan IS NOT NULL AND excluded.plan_version IS NOT NULL
                 AND (s.plan_version IS NULL OR excluded.plan_version >= s.plan_version)
                THEN excluded.plan ELSE coalesce(s.plan, excluded.plan) END,
    status = CASE WHEN excluded.status IS NOT NULL AND excluded.plan_version IS NOT NULL
                   AND (s.plan_version IS NULL OR excluded.plan_version >= s.plan_version)
                  THEN excluded.status ELSE coalesce(s.status, excluded.status) END,
    plan_version = greatest(s.plan_version, excluded.plan_version),
    paid_through = greatest(s.paid_through, excluded.paid_through),
    ended_at = coalesce(s.ended_at, excluded.ended_at),
    updated_at = now()
  WHERE s.account_id = excluded.account_id;
  IF p_invoice_id IS NOT NULL THEN
    INSERT INTO payments (account_id, kind, stripe_event_id, invoice_id, subscription_id, amount, currency, detail)
    VALUES (v.id, 'subscription', p_event_id, p_invoice_id, p_subscription_id, p_amount, p_currency, p_plan)
    ON CONFLICT (invoice_id) WHERE kind = 'subscription' DO NOTHING;
  END IF;
  SELECT CASE WHEN s.ended_at IS NOT NULL THEN least(s.paid_through + make_interval(secs => p_grace_ms / 1000.0), s.ended_at)
              ELSE s.paid_through + make_interval(secs => p_grace_ms / 1000.0) END,
         s.plan
    INTO v_until, v_plan
    FROM stripe_subscriptions s
   WHERE s.account_id = v.id AND s.paid_through IS NOT NULL AND s.plan IS NOT NULL
   ORDER BY 1 DESC, s.subscription_id
   LIMIT 1;
  UPDATE accounts a
     SET subscription_until = coalesce(v_until, a.subscription_until),
         plan = coalesce(v_plan, a.plan),
         stripe_customer_id = CASE
           WHEN a.stripe_customer_id IS NULL AND p_customer_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM accounts o WHERE o.stripe_customer_id = p_customer_id)
           THEN p_customer_id ELSE a.stripe_customer_id END
   WHERE a.id = v.id
  RETURNING * INTO v;
  IF v.plan IN ('node', 'founding_seat') AND v.subscription_until > p_now THEN
    PERFORM apply_monthly_grant(v.id, p_month, p_grant, p_low_threshold);
  END IF;
  RETURN QUERY SELECT 'applied'::text, v.plan, v.subscription_until;
END $$;
--> statement-breakpoint
-- Takes back the Tokens of a refunded pack, once per event. Stripe reports the charge's
-- cumulative amount_refunded, so the Tokens due back are the pack's share of that total minus
-- what earlier refunds of the same payment already took (or failed to take). Never below zero:
-- what cannot be taken is recorded as the shortfall on the payment row and in the ledger
-- reason, for the operator. Pack Tokens are taken before grant Tokens (they are what was sold).
CREATE FUNCTION stripe_refund(
  p_event_id text, p_type text, p_event_created timestamptz, p_charge_id text, p_payment_intent_id text,
  p_amount_refunded bigint, p_currency text, p_low_threshold bigint)
RETURNS TABLE (outcome text, account_id bigint, tokens bigint, shortfall bigint, ledger_entry_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v accounts%ROWTYPE;
  v_pack payments%ROWTYPE;
  v_done_tokens bigint;
  v_done_amount bigint;
  v_due bigint;
  v_take bigint;
  v_pack_delta bigint;
  v_grant_delta bigint;
  v_ledger_id bigint;
BEGIN
  IF NOT stripe_record_event(p_event_id, p_type, p_event_created) THEN
    RETURN QUERY SELECT 'duplicate_event'::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  SELECT * INTO v_pack FROM payments p WHERE p.kind = 'pack' AND p.payment_intent_id = p_payment_intent_id LIMIT 1;
  IF NOT FOUND THEN
    UPDATE stripe_events e SET outcome = 'unmatched' WHERE e.event_id = p_event_id;
    INSERT INTO payments (account_id, kind, stripe_event_id, payment_intent_id, charge_id, amount, currency, detail)
    VALUES (NULL, 'refund', p_event_id, p_payment_intent_id, p_charge_id, p_amount_refunded, p_currency, 'refund of a payment that is not a Token pack');
    RETURN QUERY SELECT 'unmatched'::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  SELECT * INTO v FROM accounts a WHERE a.id = v_pack.account_id FOR UPDATE;
  SELECT coalesce(sum(p.tokens + p.shortfall), 0), coalesce(sum(p.amount), 0) INTO v_done_tokens, v_done_amount
    FROM payments p WHERE p.kind = 'refund' AND p.payment_intent_id = p_payment_intent_id AND p.account_id = v.id;
  v_due := floor(v_pack.tokens::numeric * least(p_amount_refunded, v_pack.amount) / greatest(v_pack.amount, 1))::bigint - v_done_tokens;
  IF v_due <= 0 THEN
    UPDATE stripe_events e SET outcome = 'nothing_due' WHERE e.event_id = p_event_id;
    RETURN QUERY SELECT 'nothing_due'::text, v.id, 0::bigint, 0::bigint, NULL::bigint;
    RETURN;
  END IF;
  v_take := least(v_due, v.grant_balance + v.pack_balance);
  v_pack_delta := -least(v.pack_balance, v_take);
  v_grant_delta := -(v_take + v_pack_delta);
  UPDATE accounts a
     SET grant_balance = a.grant_balance + v_grant_delta,
         pack_balance = a.pack_balance + v_pack_delta
   WHERE a.id = v.id
  RETURNING * INTO v;
  INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after, reason)
  VALUES (v.id, 'adjustment', v_grant_delta, v_pack_delta, v.grant_balance, v.pack_balance,
          'refund of Token pack (Stripe ' || p_charge_id || ', ' || p_payment_intent_id || '): ' || v_take || ' Tokens taken back'
          || CASE WHEN v_due > v_take THEN ', shortfall ' || (v_due - v_take) || ' (balance too low)' ELSE '' END)
  RETURNING id INTO v_ledger_id;
  INSERT INTO payments (account_id, kind, stripe_event_id, payment_intent_id, charge_id, checkout_session_id, amount, currency, tokens, shortfall, ledger_entry_id)
  VALUES (v.id, 'refund', p_event_id, p_payment_intent_id, p_charge_id, v_pack.checkout_session_id, greatest(p_amount_refunded - v_done_amount, 0), p_currency,
          v_take, v_due - v_take, v_ledger_id);
  RETURN QUERY SELECT CASE WHEN v_due > v_take THEN 'shortfall' ELSE 'taken_back' END, v.id, v_take, v_due - v_take, v_ledger_id;
END $$;
--> statement-breakpoint
-- Records a dispute (chargeback) once, tied to the account whose payment it concerns when the
-- payment is known. No Tokens move: the operator decides (see docs/payments.md).
CREATE FUNCTION stripe_dispute(
  p_event_id text, p_type text, p_event_created timestamptz, p_dispute_id text, p_charge_id text,
  p_payment_intent_id text, p_amount bigint, p_currency text, p_reason text)
RETURNS TABLE (outcome text, account_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_account_id bigint;
BEGIN
  IF NOT stripe_record_event(p_event_id, p_type, p_event_created) THEN
    RETURN QUERY SELECT 'duplicate_event'::text, NULL::bigint;
    RETURN;
  END IF;
  SELECT p.account_id INTO v_account_id FROM payments p
   WHERE p_payment_intent_id IS NOT NULL AND p.payment_intent_id = p_payment_intent_id AND p.account_id IS NOT NULL LIMIT 1;
  INSERT INTO payments (account_id, kind, stripe_event_id, dispute_id, charge_id, payment_intent_id, amount, currency, detail)
  VALUES (v_account_id, 'dispute', p_event_id, p_dispute_id, p_charge_id, p_payment_intent_id, p_amount, p_currency, p_reason)
  ON CONFLICT (dispute_id) WHERE kind = 'dispute' DO NOTHING;
  RETURN QUERY SELECT CASE WHEN v_account_id IS NULL THEN 'unmatched' ELSE 'recorded' END, v_account_id;
END $$;
