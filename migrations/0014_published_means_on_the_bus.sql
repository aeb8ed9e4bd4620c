-- "Published" means on the bus. Until now `published_at` was set when SQS accepted the message,
-- and a queue that then lost it (the local stand-in dies with its process) left the event
-- marked and never delivered. From here on:
--   relayed_at    the relay's last send to the queue (a hint: the queue may still lose it);
--   published_at  set by the publisher once EventBridge took the event: the only proof.
-- The relay sends again whatever was relayed but is still unpublished after a while, and the
-- publisher puts a job's unpublished events on the bus in version order from this table, so
-- a lost message costs a delay, never an event or the order.
ALTER TABLE job_events ADD COLUMN relayed_at timestamptz;

UPDATE job_events SET relayed_at = published_at WHERE published_at IS NOT NULL;
UPDATE job_events e SET published_at = c.consumed_at
  FROM consumed_events c
 WHERE c.consumer = 'eventbridge' AND c.event_id = e.id;
UPDATE job_events e SET published_at = NULL
 WHERE published_at IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM consumed_events c
                    WHERE c.consumer = 'eventbridge' AND c.event_id = e.id);

-- The publisher's own record of what it did; job_events.published_at now says it.
DROP TABLE consumed_events;

COMMENT ON COLUMN job_events.relayed_at IS 'last send to the outbox queue; not a delivery';
COMMENT ON COLUMN job_events.published_at IS 'when the publisher put the event on the bus';
