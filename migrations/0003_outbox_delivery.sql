-- Outbox delivery: relays claim unpublished events for a short while before sending them, so
-- that no database transaction is open while SQS is called, and two relays never send the
-- same event in the same pass. A claim that outlives its relay (a crash) simply expires.
ALTER TABLE job_events ADD COLUMN relay_claimed_until timestamptz;

-- What each consumer has already done, by event id: a message delivered twice acts once.
CREATE TABLE consumed_events (
    consumer     text NOT NULL,
    event_id     uuid NOT NULL,
    consumed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);
