-- apply_monthly_grant: the readable source of the function in force (last set by migration 0001).
-- A change here ships as a new custom migration made from this file (see src/db/functions/README.md);
-- test/integration/db-functions.test.ts fails while the migrated database and this file differ.
--
-- Resets the grant bucket to p_grant when it belongs to an earlier MYT month (lazy monthly
-- grant): unused grant is written off as an 'expiry' row, the new grant as a 'grant' row.
-- Only node / founding_seat accounts receive grants. Caller must hold no assumptions about
-- the row: this function takes the account row lock itself.
CREATE OR REPLACE FUNCTION apply_monthly_grant(p_account_id bigint, p_month date, p_grant bigint, p_low_threshold bigint)
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
