-- ledger_adjust: the readable source of the function in force (last set by migration 0001).
-- A change here ships as a new custom migration made from this file (see src/db/functions/README.md);
-- test/integration/db-functions.test.ts fails while the migrated database and this file differ.
--
-- Pack credits and manual adjustments. A positive delta goes to the pack bucket (it never
-- expires); a negative one is taken from the grant first, then packs. Refused, changing
-- nothing, when it would take the balance below zero.
CREATE OR REPLACE FUNCTION ledger_adjust(p_account_id bigint, p_kind text, p_delta bigint, p_reason text, p_low_threshold bigint)
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
