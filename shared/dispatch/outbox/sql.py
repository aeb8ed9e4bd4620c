"""The outbox write: every change to a job writes exactly one event row, in the same statement.

`with_event` wraps a data-modifying statement on `jobs` that ends in `RETURNING ... document`
(the job as `dispatch_job_json` writes it: the answer's text, and as jsonb the event's data).
Each row it changes gets one `job_events` row (type and actor as parameters, data = that
document: the public Job at its new version), so a change without its event cannot be
committed, and `job_events_one_per_change` (unique job_id, version) makes a second event for
the same change impossible.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, LiteralString

from psycopg.rows import DictRow

from dispatch.db import Connection

if TYPE_CHECKING:  # only the keyed writers import the idempotency store
    from dispatch.idempotency import KeyedRequest


@dataclass(frozen=True)
class Change:
    """A change of jobs with its event, in two forms. `plain` alone; `keyed` also records the
    caller's idempotency key with its answer in the same statement, so that the key, the
    change, the event and the answer commit together in one round trip (a key already taken
    raises idempotency_keys_pkey, and the statement undoes itself)."""

    plain: LiteralString
    keyed: LiteralString

    def run(
        self,
        conn: Connection,
        key: "KeyedRequest | None",
        status: int,
        params: dict[str, Any],
    ) -> DictRow | None:
        """The change alone, or with the caller's key and its answer in the same statement."""
        if key is None:
            return conn.execute(self.plain, params).fetchone()
        return conn.execute(self.keyed, {**params, **key.answering(status)}).fetchone()


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
# the tables, in order, so a message lost with its queue (a crash of the local stand-in) or
# sent out of order costs a delay, never an event. Whatever is still unpublished a while after
# its send is sent again.
#
# One outbox, two tables: `job_events` (one per version of a job) and `offer_events` (the
# round's offers, the applications, the choice's events: any number per version). Every
# statement below covers both, so an event of either kind is claimed, sent, put on the bus and
# marked the same way. A job's events have one order, the queue's and the bus's: by version,
# the job's own event of a version before the offer events written at it (they are written
# while the job is at that version), those by when they occurred, then by id (uuid v7).

# What a relay sends: the event as the contract shows it (dispatch_event), written by Postgres,
# with what orders it among its job's events (`offer`: from offer_events).
JOB_MESSAGE: LiteralString = """id, job_id, version, false AS offer, occurred_at,
              dispatch_event(job_events)::text AS body"""
OFFER_MESSAGE: LiteralString = """id, job_id, version, true AS offer, occurred_at,
              dispatch_event(offer_events)::text AS body"""


def _picked(table: LiteralString, which: LiteralString, order: LiteralString) -> LiteralString:
    return f"""
    SELECT id, job_id, version, occurred_at FROM {table}
     WHERE published_at IS NULL
       AND (relayed_at IS NULL
            OR relayed_at < now() - make_interval(secs => %(resend_seconds)s))
       AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
       {which}
     ORDER BY {order}
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED"""


def _claim(
    which: LiteralString, job_order: LiteralString, offer_order: LiteralString,
    order: LiteralString,
) -> LiteralString:  # fmt: skip
    """Claim a batch for a short while in one statement (SKIP LOCKED: two relays never take
    the same event), so that no transaction is open while SQS is called: the first
    `batch_size` events of both tables in `order` (each table locks at most that many; those
    not chosen are let go when the statement ends)."""
    return f"""
WITH picked_job AS ({_picked("job_events", which, job_order)}
), picked_offer AS ({_picked("offer_events", which, offer_order)}
), chosen AS (
    SELECT id FROM (
        SELECT id, job_id, version, false AS offer, occurred_at FROM picked_job
        UNION ALL
        SELECT id, job_id, version, true, occurred_at FROM picked_offer
    ) picked
     ORDER BY {order}
     LIMIT %(batch_size)s
), claimed_job AS (
    UPDATE job_events
       SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
     WHERE id = ANY(ARRAY(SELECT id FROM chosen))
    RETURNING {JOB_MESSAGE}
), claimed_offer AS (
    UPDATE offer_events
       SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
     WHERE id = ANY(ARRAY(SELECT id FROM chosen))
    RETURNING {OFFER_MESSAGE}
)
SELECT * FROM claimed_job UNION ALL SELECT * FROM claimed_offer
"""


# The catch-up: oldest first, through the partial indexes of unpublished events
# (job_events_unpublished, offer_events_unpublished_since).
CLAIM_UNPUBLISHED = _claim("", "occurred_at", "occurred_at", "occurred_at, id")
# Right after a writer commits: that job's events only, through (job_id, version) and
# offer_events_unpublished (job_id), in the job's order.
CLAIM_UNPUBLISHED_OF_JOB = _claim(
    "AND job_id = %(job_id)s",
    "job_id, version",
    "occurred_at, id",
    "version, offer, occurred_at, id",
)

# The end of a pass: what SQS took is relayed; every claim of the pass is let go (of either
# table: ids are uuids, one table's never another's).
MARK_RELAYED = """
WITH job AS (
    UPDATE job_events
       SET relayed_at = CASE WHEN id = ANY(%(sent)s) THEN now() ELSE relayed_at END,
           relay_claimed_until = NULL
     WHERE id = ANY(%(claimed)s)
)
UPDATE offer_events
   SET relayed_at = CASE WHEN id = ANY(%(sent)s) THEN now() ELSE relayed_at END,
       relay_claimed_until = NULL
 WHERE id = ANY(%(claimed)s)
"""

# The publisher: a job's events not yet on the bus, up to the version a message announced, in
# the job's order (a version exists only once every earlier one committed: the job's row lock
# serialises its changes; offer events of a version are written while the job is at it).
UNPUBLISHED_UP_TO = """
SELECT body FROM (
    SELECT version, false AS offer, occurred_at, id, dispatch_event(e)::text AS body
      FROM job_events e
     WHERE e.job_id = %(job_id)s AND e.version <= %(version)s AND e.published_at IS NULL
    UNION ALL
    SELECT version, true, occurred_at, id, dispatch_event(o)::text
      FROM offer_events o
     WHERE o.job_id = %(job_id)s AND o.version <= %(version)s AND o.published_at IS NULL
) pending
 ORDER BY version, offer, occurred_at, id
"""

# The one mark of "on the bus", for events of either table.
MARK_PUBLISHED = """
WITH job AS (
    UPDATE job_events SET published_at = now() WHERE id = ANY(%(ids)s) AND published_at IS NULL
)
UPDATE offer_events SET published_at = now() WHERE id = ANY(%(ids)s) AND published_at IS NULL
"""

# Age of the oldest event not yet on the bus, of either table: the outbox lag.
RELAY_LAG = """
SELECT coalesce(extract(epoch FROM now() - least(
           (SELECT min(occurred_at) FROM job_events WHERE published_at IS NULL),
           (SELECT min(occurred_at) FROM offer_events WHERE published_at IS NULL))), 0)::float
       AS seconds
"""
