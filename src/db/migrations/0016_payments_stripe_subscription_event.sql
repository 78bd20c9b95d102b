-- Applies one Stripe subscription fact (a paid invoice, a subscription state, a deletion, a
-- completed subscription Checkout) once, keyed by the event id, in one transaction. Each field
-- of stripe_subscriptions only moves forward by the objects' own timestamps (paid_through: the
-- latest paid period end; plan/status: the newest state by p_version; ended_at: set once), so
-- events applied in any order converge. The account's subscription_until is then derived from
-- all its subscriptions: paid period end plus grace, but never past a deletion's end. Its plan
-- follows the subscription that runs longest (a deletion keeps the plan). A paid plan gets the
-- month's grant at once when it has not had it (a new subscriber starts with the full grant).
CREATE OR REPLACE FUNCTION stripe_subscription_event(
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
