-- Reserves one attempt on every budget key, or on none: the count and the refusal are one
-- statement, taken before any password is hashed, so parallel attempts can never pass a limit.
-- Each key's window starts with its first attempt and lasts p_window_ms;
-- a NULL limit only counts. Returns 0 when the attempt is reserved, else the milliseconds until
-- the fullest key's window ends (nothing is counted then). Rows are locked in key order, so
-- two calls over overlapping keys never deadlock.
CREATE OR REPLACE FUNCTION reserve_attempt(p_keys text[], p_limits integer[], p_window_ms bigint, p_now timestamptz)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_window interval := make_interval(secs => p_window_ms / 1000.0);
  v_wait bigint := 0;
  v_i integer;
  v_failures integer;
  v_start timestamptz;
BEGIN
  FOR v_i IN SELECT k.ord FROM unnest(p_keys) WITH ORDINALITY AS k(throttle_key, ord) ORDER BY k.throttle_key LOOP
    INSERT INTO sign_in_failures (throttle_key, failures, window_start) VALUES (p_keys[v_i], 0, p_now)
      ON CONFLICT (throttle_key) DO NOTHING;
    SELECT f.failures, f.window_start INTO v_failures, v_start FROM sign_in_failures f WHERE f.throttle_key = p_keys[v_i] FOR UPDATE;
    IF v_start > p_now - v_window AND p_limits[v_i] IS NOT NULL AND v_failures >= p_limits[v_i] THEN
      v_wait := greatest(v_wait, ceil(extract(epoch FROM v_start + v_window - p_now) * 1000)::bigint, 1);
    END IF;
  END LOOP;
  IF v_wait > 0 THEN
    RETURN v_wait;
  END IF;
  UPDATE sign_in_failures f SET
    failures = CASE WHEN f.window_start <= p_now - v_window THEN 1 ELSE f.failures + 1 END,
    window_start = CASE WHEN f.window_start <= p_now - v_window THEN p_now ELSE f.window_start END
   WHERE f.throttle_key = ANY(p_keys);
  RETURN 0;
END $$;
