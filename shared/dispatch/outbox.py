"""The outbox write: every change to a job writes exactly one event row, in the same statement.

`with_event` wraps a data-modifying statement on `jobs` that ends in `RETURNING *`. Each row it
changes gets one `job_events` row (type and actor as parameters, data = the job as it now is),
so a change without its event cannot be committed, and `job_events_one_per_change`
(unique job_id, version) makes a second event for the same change impossible.
"""

from typing import LiteralString


def with_event(change: LiteralString) -> LiteralString:
    return f"""
WITH changed AS ({change}),
event AS (
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, to_jsonb(changed) FROM changed
)
SELECT * FROM changed
"""


# -- delivery -------------------------------------------------------------------------------
# A relay claims unpublished events (a short lease on the rows, in one statement), sends them
# to the SQS FIFO queue outside any transaction, then marks what was sent. Events of one job
# go out in version order: an event is only claimed with every earlier unsent one of its job.

CLAIM_UNPUBLISHED = """
WITH picked AS (
    SELECT id, job_id, version FROM job_events
     WHERE published_at IS NULL
       AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
       AND (%(job_id)s::uuid IS NULL OR job_id = %(job_id)s::uuid)
     ORDER BY occurred_at, job_id, version
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), in_order AS (
    SELECT p.id FROM picked p
     WHERE NOT EXISTS (SELECT 1 FROM job_events earlier
                        WHERE earlier.job_id = p.job_id
                          AND earlier.version < p.version
                          AND earlier.published_at IS NULL
                          AND earlier.id NOT IN (SELECT id FROM picked))
)
UPDATE job_events e
   SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
  FROM in_order
 WHERE e.id = in_order.id
RETURNING e.id, e.job_id, e.type, e.version, e.actor, e.occurred_at, e.data
"""

MARK_PUBLISHED = """
UPDATE job_events SET published_at = now(), relay_claimed_until = NULL WHERE id = ANY(%(ids)s)
"""

# Age of the oldest event not yet delivered: the relay lag.
RELAY_LAG = """
SELECT coalesce(extract(epoch FROM now() - min(occurred_at)), 0)::float AS seconds
  FROM job_events WHERE published_at IS NULL
"""
