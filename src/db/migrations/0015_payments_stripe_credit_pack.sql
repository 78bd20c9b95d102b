-- Credits a Token pack bought through Stripe Checkout, once. One statement, one transaction:
-- the processed-event record (keyed by the Stripe event id), the payment row (unique per
-- Checkout Session, so `checkout.session.completed` and `async_payment_succeeded` of the same
-- session cannot both credit), the pack bucket, the ledger row and the low-balance re-arm.
-- A duplicate delivery waits on the event id's index entry until the first commits, then
-- changes nothing.
CREATE OR REPLACE FUNCTION stripe_credit_pack(
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
