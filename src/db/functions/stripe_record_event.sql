-- Records a Stripe event as processed, inside the caller's transaction; false when it already
-- was (a replay or a duplicate: the caller then changes nothing). A concurrent duplicate waits
-- on the event id's index entry until the first transaction ends.
CREATE OR REPLACE FUNCTION stripe_record_event(p_event_id text, p_type text, p_event_created timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stripe_events (event_id, type, event_created, outcome) VALUES (p_event_id, p_type, p_event_created, 'applied')
  ON CONFLICT (event_id) DO NOTHING;
  RETURN FOUND;
END $$;
