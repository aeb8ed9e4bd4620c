"""The outbox write: every change to a job writes exactly one event row, in the same statement.

`with_event` wraps a data-modifying statement on `jobs` that ends in `RETURNING ... document`
(the job as `dispatch_job_json` writes it: the answer's text, and as jsonb the event's data).
Each row it changes gets one `job_events` row (type and actor as parameters, data = that
document: the public Job at its new version), so a change without its event cannot be
committed, and `job_events_one_per_change` (unique job_id, version) makes a second event for
the same change impossible.
"""

from dataclasses import dataclass
from typing import LiteralString


@dataclass(frozen=True)
class Change:
    """A change of jobs with its event, in two forms. `plain` alone; `keyed` also records the
    caller's idempotency key with its answer in the same statement, so that the key, the
    change, the event and the answer commit together in one round trip (a key already taken
    raises idempotency_keys_pkey, and the statement undoes itself)."""

    plain: LiteralString
    keyed: LiteralString


def with_event(
    change: LiteralString, also: LiteralString = "", answer: LiteralString = "document"
) -> Change:
    """`change` with its event; `also`, further data-modifying CTEs over `changed` that must
    commit with it (a rating updates the worker's); `answer`, the success body as an
    expression over `changed` (the Job by default). Rows come back with `answer` as text."""
    head = f"""
WITH changed AS ({change}),
event AS (
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
){also},
answers AS (SELECT *, ({answer})::text AS answer FROM changed)"""
    keyed = """,
answered AS (
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s, %(key)s, %(fingerprint)s, %(answer_status)s, answer FROM answers
)"""
    tail = """
SELECT * FROM answers
"""
    return Change(head + tail, head + keyed + tail)


# -- delivery -------------------------------------------------------------------------------
# A relay claims unpublished events (a short lease on the rows, in one statement), sends them
# to the SQS FIFO queue outside any transaction, then marks what was sent. Events of one job
# go out in version order: an event is only claimed with every earlier unsent one of its job.


# What a relay sends: the event as the contract shows it (dispatch_event), written by Postgres.
MESSAGE: LiteralString = "id, job_id, version, dispatch_event(job_events)::text AS body"


def _claim(which: LiteralString, order: LiteralString) -> LiteralString:
    return f"""
WITH picked AS (
    SELECT id, job_id, version FROM job_events
     WHERE published_at IS NULL
       AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
       {which}
     ORDER BY {order}
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), ranked AS (
    SELECT id, job_id, version,
           row_number() OVER (PARTITION BY job_id ORDER BY version) AS rank
      FROM picked
), in_order AS (
    -- An event goes only with every earlier unsent event of its job: the picked events of a
    -- job must start at its first unsent version and leave no gap (versions step by one).
    SELECT r.id FROM ranked r
     WHERE r.version = r.rank - 1 + (SELECT e.version FROM job_events e
                                      WHERE e.job_id = r.job_id AND e.published_at IS NULL
                                      ORDER BY e.version LIMIT 1)
)
UPDATE job_events
   SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
 WHERE id = ANY(ARRAY(SELECT id FROM in_order))
RETURNING {MESSAGE}
"""


# The catch-up: oldest first, through the partial index of unpublished events.
CLAIM_UNPUBLISHED = _claim("", "occurred_at")
# Right after a writer commits: that job's events only, through (job_id, version).
CLAIM_UNPUBLISHED_OF_JOB = _claim("AND job_id = %(job_id)s", "job_id, version")

MARK_PUBLISHED = """
UPDATE job_events SET published_at = now(), relay_claimed_until = NULL WHERE id = ANY(%(ids)s)
"""

# Age of the oldest event not yet delivered: the relay lag.
RELAY_LAG = """
SELECT coalesce(extract(epoch FROM now() - min(occurred_at)), 0)::float AS seconds
  FROM job_events WHERE published_at IS NULL
"""
