-- The relay's resends back off (issue 36, point 8). An event still unpublished p_resend_seconds
-- after its send went again on every pass after that: once the publisher lagged more than that,
-- each pass of the catch-up relay sent the whole backlog again (up to 529 events a pass on the
-- local stack), every resend one more call on the queue that was already behind (SQS FIFO drops a
-- repeat within five minutes anyway; moto scans its whole queue to drop it). Now an event is sent
-- again once p_resend_seconds have passed since its last send and at least as long as it had
-- waited before that send, capped at five minutes (SQS FIFO's deduplication window): resends of a
-- lost message still come p_resend_seconds after a prompt send, a backlog's at ever longer
-- intervals (its age doubles between sends), never more often than before, and an event the
-- queue lost goes again within five minutes whatever its age. The predicate of the partial
-- indexes of unpublished events still begins the expression, so the claims still read them.
DROP FUNCTION dispatch_relay_due(timestamptz, timestamptz, timestamptz, double precision);

CREATE FUNCTION dispatch_relay_due(
    published_at timestamptz, occurred_at timestamptz, relayed_at timestamptz,
    relay_claimed_until timestamptz, p_resend_seconds double precision
) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT published_at IS NULL
   AND (relayed_at IS NULL
        OR relayed_at < now() - greatest(make_interval(secs => p_resend_seconds),
                                         least(relayed_at - occurred_at, interval '5 minutes')))
   AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
$$;
