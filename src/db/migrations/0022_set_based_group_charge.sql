-- charge_calls: the readable source of the function in force.
-- A change here ships as a new custom migration made from this file (see src/db/functions/README.md);
-- test/integration/db-functions.test.ts fails while the migrated database and this file differ.
--
-- A group of paid calls charged set-based: the same outcomes, balances, ledger rows and notices
-- as running charge_call once per call in the arrays' order (test/integration/charge-calls.test.ts
-- runs both on random groups and compares), at a fraction of the database's work: one UPDATE
-- per account and one multi-row ledger INSERT for the whole group instead of one PL/pgSQL call,
-- two key lookups, a lock, an UPDATE and an INSERT per call.
--
-- Calls of one account are charged in array order (the caller keeps each key's arrival order).
-- Its k-th call that passes the plan and subscription checks is charged exactly when k fits both
-- the balance and the day's remaining cap; the others get the refusal charge_call would give
-- them after the charges before them. Accounts whose calls need the lazy monthly grant, or whose
-- calls fall on two MYT days (a group straddling midnight), go through charge_call one call at a
-- time: rare, and the grant's expiry and grant rows are charge_call's business.
-- The paid plans ('node', 'founding_seat') are PAID_PLANS in src/accounts/accounts.ts, and the
-- channel 'outbox_ready' is OUTBOX_READY in src/db/channels.ts (a test compares them).
CREATE OR REPLACE FUNCTION charge_calls(
  p_key_hashes text[], p_ats timestamptz[], p_days date[], p_months date[],
  p_daily_cap integer, p_grant bigint, p_low_threshold bigint)
RETURNS TABLE (ord bigint, outcome text, account_id bigint, plan text, credits_left bigint, calls_today integer, low_balance_crossed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_known text[];
  v_slow bigint[];
  v_crossed boolean := false;
  v record;
BEGIN
  -- Lock every account of the group in id order (so two groups cannot deadlock), and note the
  -- keys valid before the lock and the accounts that take the one-call-at-a-time path. A row
  -- locked after a wait is its newest version, and stays so while we hold the lock.
  SELECT coalesce(array_agg(g.key_hash), '{}'), coalesce(array_agg(g.id) FILTER (WHERE g.slow), '{}')
    INTO v_known, v_slow
    FROM (SELECT l.id, min(l.key_hash) AS key_hash,
                 count(DISTINCT c.day) > 1
                 OR bool_or(l.plan IN ('node', 'founding_seat') AND l.subscription_until > c.at
                            AND (l.grant_month IS NULL OR l.grant_month < c.month)) AS slow
            FROM (SELECT a.id, k.key_hash, a.plan, a.subscription_until, a.grant_month
                    FROM api_keys k JOIN accounts a ON a.id = k.account_id
                   WHERE k.key_hash = ANY (p_key_hashes) AND k.revoked_at IS NULL
                   ORDER BY a.id
                     FOR UPDATE OF a) l
            JOIN unnest(p_key_hashes, p_ats, p_days, p_months) AS c(key_hash, at, day, month) ON c.key_hash = l.key_hash
           GROUP BY l.id) g;

  -- A new statement, so a new snapshot: a key regenerated while we waited for its account's
  -- lock is invalid here, as in charge_call's re-check.
  FOR v IN
    WITH c AS (
      SELECT u.ord, u.at, u.day, k.account_id AS aid
        FROM unnest(p_key_hashes, p_ats, p_days) WITH ORDINALITY AS u(key_hash, at, day, ord)
        LEFT JOIN api_keys k ON k.key_hash = u.key_hash AND k.revoked_at IS NULL AND u.key_hash = ANY (v_known)),
    s AS (
      SELECT c.ord, c.aid, c.day, a.plan AS plan_of, a.grant_balance AS g, a.pack_balance AS p,
             a.low_balance_notified AS notified,
             CASE WHEN a.usage_day = c.day THEN a.calls_today ELSE 0 END AS c0,
             CASE WHEN a.plan NOT IN ('node', 'founding_seat') THEN 'node_tier_required'
                  WHEN a.subscription_until IS NULL OR a.subscription_until <= c.at THEN 'subscription_inactive'
             END AS refusal
        FROM c JOIN accounts a ON a.id = c.aid
       WHERE a.id <> ALL (v_slow)),
    -- upto: the account's calls that passed the plan and subscription checks, up to this one;
    -- fits: how many of them can be charged (balance, then the day's cap).
    r AS (
      SELECT s.*,
             count(*) FILTER (WHERE s.refusal IS NULL) OVER (PARTITION BY s.aid ORDER BY s.ord) AS upto,
             greatest(0, least(s.g + s.p, p_daily_cap - s.c0)) AS fits
        FROM s),
    -- done: the account's charges in the group up to and including this call.
    o AS (
      SELECT r.*, r.refusal IS NULL AND r.upto <= r.fits AS charged, least(r.upto, r.fits) AS done
        FROM r),
    t AS (
      SELECT o.*,
             o.charged AND (o.g + o.p - o.done) < p_low_threshold
               AND CASE WHEN o.done = 1 THEN NOT o.notified ELSE (o.g + o.p - o.done + 1) >= p_low_threshold END AS crossed
        FROM o),
    -- The grant is spent before packs: packs never expire, grants do.
    acc AS (
      UPDATE accounts a
         SET grant_balance = last.g - least(last.done, last.g),
             pack_balance = last.p - greatest(last.done - last.g, 0),
             usage_day = last.day,
             calls_today = last.c0 + last.done,
             low_balance_notified = (last.g + last.p - last.done) < p_low_threshold
        FROM (SELECT DISTINCT ON (t.aid) t.* FROM t WHERE t.charged ORDER BY t.aid, t.done DESC) last
       WHERE a.id = last.aid),
    led AS (
      INSERT INTO ledger_entries (account_id, kind, grant_delta, pack_delta, grant_after, pack_after)
      SELECT t.aid, 'charge', CASE WHEN t.done <= t.g THEN -1 ELSE 0 END, CASE WHEN t.done <= t.g THEN 0 ELSE -1 END,
             t.g - least(t.done, t.g), t.p - greatest(t.done - t.g, 0)
        FROM t WHERE t.charged ORDER BY t.aid, t.ord),
    -- The notice is part of the charge that crossed the threshold (see charge_call).
    note AS (
      INSERT INTO outbox (kind, account_id, chat_id, payload)
      SELECT 'low_balance', t.aid, al.chat_id, jsonb_build_object('credits_left', t.g + t.p - t.done, 'threshold', p_low_threshold)
        FROM t LEFT JOIN alert_settings al ON al.account_id = t.aid
       WHERE t.crossed ORDER BY t.aid)
    SELECT c.ord AS c_ord,
           CASE WHEN c.aid IS NULL THEN 'invalid_api_key'
                WHEN t.charged THEN 'ok'
                WHEN t.refusal IS NOT NULL THEN t.refusal
                WHEN t.g + t.p - t.done < 1 THEN 'insufficient_credits'
                ELSE 'rate_limited' END AS c_outcome,
           t.aid AS c_account_id, t.plan_of AS c_plan, t.g + t.p - t.done AS c_credits_left,
           t.c0 + t.done AS c_calls_today, coalesce(t.crossed, false) AS c_crossed
      FROM c LEFT JOIN t ON t.ord = c.ord
     WHERE c.aid IS NULL OR t.ord IS NOT NULL
  LOOP
    ord := v.c_ord; outcome := v.c_outcome; account_id := v.c_account_id; plan := v.c_plan;
    credits_left := v.c_credits_left; calls_today := v.c_calls_today; low_balance_crossed := v.c_crossed;
    v_crossed := v_crossed OR v.c_crossed;
    RETURN NEXT;
  END LOOP;
  IF v_crossed THEN
    PERFORM pg_notify('outbox_ready', '');
  END IF;

  IF cardinality(v_slow) > 0 THEN
    FOR v IN
      SELECT u.ord AS c_ord, u.key_hash, u.at, u.day, u.month
        FROM unnest(p_key_hashes, p_ats, p_days, p_months) WITH ORDINALITY AS u(key_hash, at, day, month, ord)
        JOIN api_keys k ON k.key_hash = u.key_hash AND k.revoked_at IS NULL AND u.key_hash = ANY (v_known)
       WHERE k.account_id = ANY (v_slow)
       ORDER BY u.ord
    LOOP
      RETURN QUERY SELECT v.c_ord, c.* FROM charge_call(v.key_hash, v.at, v.day, v.month, p_daily_cap, p_grant, p_low_threshold) c;
    END LOOP;
  END IF;
END $$;
