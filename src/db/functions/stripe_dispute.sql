-- Records a dispute (chargeback) once, tied to the account whose payment it concerns when the
-- payment is known. No Tokens move: the operator decides (see docs/payments.md).
CREATE OR REPLACE FUNCTION stripe_dispute(
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
