-- Which events the relay may claim, once, in SQL (issue 36, point 2): until now a fragment of
-- Python text pasted into each claim. An event is due when it is not on the bus yet, was never
-- sent or was sent p_resend_seconds ago or more (what SQS took may have been lost with the
-- queue), and no relay holds a live claim on it. Inlined where it is called (one SELECT of one
-- expression, STABLE, not STRICT), so the claims still read the partial indexes of
-- unpublished events (job_events_unpublished, offer_events_unpublished_since,
-- offer_events_unpublished): the expression begins with their predicate.
CREATE FUNCTION dispatch_relay_due(
    published_at timestamptz, relayed_at timestamptz, relay_claimed_until timestamptz,
    p_resend_seconds double precision
) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT published_at IS NULL
   AND (relayed_at IS NULL OR relayed_at < now() - make_interval(secs => p_resend_seconds))
   AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
$$;
