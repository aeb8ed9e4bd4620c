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
