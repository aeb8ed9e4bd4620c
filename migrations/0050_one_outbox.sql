-- One outbox (issue 36, point 3): offer events travel the relay and the publisher that job
-- events do (dispatch.outbox). Until now the offer round, the applications and the choice
-- deadline put them on the bus themselves, with their own mark and their own catch-up (the
-- sweeper's, for events still off the bus 30 s after they were written). From here on:
--   relay_claimed_until  a relay's claim of the event, as on job_events;
--   relayed_at           the relay's last send to the outbox queue (a hint, not a delivery);
--   published_at         set by the publisher once EventBridge took the event: the only proof.
-- The two tables stay apart (their rows differ: one job event per version, any number of
-- offer events per version); the relay claims from both, the publisher puts a job's events of
-- both tables on the bus in one order (docs/architecture.md, "One outbox, two tables").
ALTER TABLE offer_events ADD COLUMN relay_claimed_until timestamptz;
ALTER TABLE offer_events ADD COLUMN relayed_at timestamptz;

COMMENT ON COLUMN offer_events.relayed_at IS 'last send to the outbox queue; not a delivery';
COMMENT ON COLUMN offer_events.published_at IS 'when the publisher put the event on the bus';

GRANT UPDATE (relay_claimed_until, relayed_at) ON offer_events TO dispatch_app;

-- The catch-up claims the oldest unpublished events first, as it does job_events'
-- (job_events_unpublished); offer_events_unpublished (job_id) stays for a job's own events.
CREATE INDEX offer_events_unpublished_since ON offer_events (occurred_at)
 WHERE published_at IS NULL;
