-- free_call: the readable source of the function in force (last set by migration 0010).
-- A change here ships as a new custom migration made from this file (see src/db/functions/README.md);
-- test/integration/db-functions.test.ts fails while the migrated database and this file differ.
--
-- The whole access check of one free call (GET /api/v1/movers, /derivatives, /news, /macro,
-- /fundamentals) as one function, so a call costs one statement and one round trip. Checks in
-- the contract's order: the key (known, not revoked), the subscription (active; any plan),
-- then the key's calls in the current fixed window (windows are aligned to multiples of
-- p_window_ms since the epoch, e.g. to the minute). Only an admitted call is counted. The
-- upsert locks the key's window row, so concurrent calls are counted exactly, also across
-- server processes. Balances, the ledger and the daily cap are never read or written.
CREATE OR REPLACE FUNCTION free_call(p_key_hash text, p_now timestamptz, p_limit integer, p_window_ms integer)
RETURNS TABLE (outcome text, calls integer, window_start timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_until timestamptz;
  v_window timestamptz;
  v_calls integer;
  v_start timestamptz;
BEGIN
  SELECT a.subscription_until INTO v_until
    FROM api_keys k JOIN accounts a ON a.id = k.account_id
   WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'invalid_api_key'::text, NULL::integer, NULL::timestamptz;
    RETURN;
  END IF;
  IF v_until IS NULL OR v_until <= p_now THEN
    RETURN QUERY SELECT 'subscription_inactive'::text, NULL::integer, NULL::timestamptz;
    RETURN;
  END IF;
  v_window := to_timestamp((floor(extract(epoch FROM p_now) * 1000 / p_window_ms) * p_window_ms / 1000)::double precision);
  -- A new window starts again at 1; within the window the count grows only while below the
  -- limit. A process whose clock is behind counts into the newer stored window.
  INSERT INTO free_call_windows AS w (key_hash, window_start, calls) VALUES (p_key_hash, v_window, 1)
  ON CONFLICT (key_hash) DO UPDATE
     SET window_start = greatest(w.window_start, excluded.window_start),
         calls = CASE WHEN excluded.window_start > w.window_start THEN 1 ELSE w.calls + 1 END
   WHERE excluded.window_start > w.window_start OR w.calls < p_limit
  RETURNING w.calls, w.window_start INTO v_calls, v_start;
  IF NOT FOUND THEN
    SELECT w.calls, w.window_start INTO v_calls, v_start FROM free_call_windows w WHERE w.key_hash = p_key_hash;
    RETURN QUERY SELECT 'rate_limited'::text, v_calls, v_start;
    RETURN;
  END IF;
  RETURN QUERY SELECT 'ok'::text, v_calls, v_start;
END $$;
