-- Takes back the Tokens of a refunded pack, once per event. Stripe reports the charge's
-- cumulative amount_refunded, so the Tokens due back are the pack's share of that total minus
-- what earlier refunds of the same payment already took (or failed to take). Never below zero:
-- what cannot be taken is recorded as the shortfall on the payment row and in the ledger
-- reason, for the operator. Pack Tokens are taken before grant Tokens (they are what was sold).
CREATE OR REPLACE FUNCTION stripe_refund(
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
