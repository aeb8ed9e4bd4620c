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
# "Published" means on the bus, and only the publisher says so (published_at). The relay sends
# committed events to the SQS FIFO queue and records the send (relayed_at); the queue is a
# wake-up call, not the record: the publisher puts a job's unpublished events on the bus from
# this table, in version order, so a message lost with its queue (a crash of the local
# stand-in) or sent out of order costs a delay, never an event. Whatever is still unpublished
# a while after its send is sent again.

# What a relay sends: the event as the contract shows it (dispatch_event), written by Postgres.
MESSAGE: LiteralString = "id, job_id, version, dispatch_event(job_events)::text AS body"


def _claim(which: LiteralString, order: LiteralString) -> LiteralString:
    """Claim a batch for a short while in one statement (SKIP LOCKED: two relays never take
    the same event), so that no transaction is open while SQS is called."""
    return f"""
WITH picked AS (
    SELECT id FROM job_events
     WHERE published_at IS NULL
       AND (relayed_at IS NULL
            OR relayed_at < now() - make_interval(secs => %(resend_seconds)s))
       AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
       {which}
     ORDER BY {order}
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
)
UPDATE job_events
   SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
 WHERE id = ANY(ARRAY(SELECT id FROM picked))
RETURNING {MESSAGE}
"""


# The catch-up: oldest first, through the partial index of unpublished events.
CLAIM_UNPUBLISHED = _claim("", "occurred_at")
# Right after a writer commits: that job's events only, through (job_id, version).
CLAIM_UNPUBLISHED_OF_JOB = _claim("AND job_id = %(job_id)s", "job_id, version")

# The end of a pass: what SQS took is relayed; every claim of the pass is let go.
MARK_RELAYED = """
UPDATE job_events
   SET relayed_at = CASE WHEN id = ANY(%(sent)s) THEN now() ELSE relayed_at END,
       relay_claimed_until = NULL
 WHERE id = ANY(%(claimed)s)
"""

# The publisher: a job's events not yet on the bus, up to the version a message announced, in
# version order (a version exists only once every earlier one committed: the job's row lock
# serialises its changes).
UNPUBLISHED_UP_TO = """
SELECT dispatch_event(job_events)::text AS body
  FROM job_events
 WHERE job_id = %(job_id)s AND version <= %(version)s AND published_at IS NULL
 ORDER BY version
"""

MARK_PUBLISHED = """
UPDATE job_events SET published_at = now() WHERE id = %(id)s AND published_at IS NULL
"""

# Age of the oldest event not yet on the bus: the outbox lag.
RELAY_LAG = """
SELECT coalesce(extract(epoch FROM now() - min(occurred_at)), 0)::float AS seconds
  FROM job_events WHERE published_at IS NULL
"""
