"""The outbox's delivery: the relay's claim and mark, the publisher's read and mark.

The write is not here: every statement that changes a job writes its one `job_events` row in
the same statement (its `event` CTE: type and actor as parameters, data = the job as
`dispatch_job_json` writes it, the public Job at its new version), so a change without its
event cannot be committed, and `job_events_one_per_change` (unique job_id, version) makes a
second event for the same change impossible. Offer events are written by their own
statements (the offers, the applications, the choice) in the same transaction as their change.
"""

from datetime import datetime
from typing import TypedDict
from uuid import UUID

from dispatch.db import Query

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

# A relay's claim: a batch claimed for a short while in one statement (SKIP LOCKED: two relays
# never take the same event), so that no transaction is open while SQS is called: the first
# %(batch_size)s due events (dispatch_relay_due, migrations 0055 and 0056: resends back off)
# of both tables in the job's order (each table locks at most that many; those not chosen are
# let go when the statement ends). It returns what a relay sends: the event as the contract
# shows it (dispatch_event), written by Postgres, with what orders it among its job's events
# (`offer`: from offer_events).


class ClaimParams(TypedDict):
    batch_size: int
    claim_seconds: float
    resend_seconds: float


class Claimed(TypedDict):
    """A claimed event, as dispatch.outbox.relay.Message takes it."""

    id: UUID
    job_id: UUID
    version: int
    offer: bool
    occurred_at: datetime
    body: str


# The catch-up: oldest first, through the partial indexes of unpublished events
# (job_events_unpublished, offer_events_unpublished_since).
CLAIM_UNPUBLISHED: Query[ClaimParams, Claimed] = Query("""
WITH picked_job AS (
    SELECT id, job_id, version, occurred_at FROM job_events
     WHERE dispatch_relay_due(published_at, occurred_at, relayed_at, relay_claimed_until,
                              %(resend_seconds)s::float8)
     ORDER BY occurred_at
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), picked_offer AS (
    SELECT id, job_id, version, occurred_at FROM offer_events
     WHERE dispatch_relay_due(published_at, occurred_at, relayed_at, relay_claimed_until,
                              %(resend_seconds)s::float8)
     ORDER BY occurred_at
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), chosen AS (
    SELECT id FROM (
        SELECT id, job_id, version, false AS offer, occurred_at FROM picked_job
        UNION ALL
        SELECT id, job_id, version, true, occurred_at FROM picked_offer
    ) picked
     ORDER BY occurred_at, id
     LIMIT %(batch_size)s
), claimed_job AS (
    UPDATE job_events
       SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
     WHERE id = ANY(ARRAY(SELECT id FROM chosen))
    RETURNING id, job_id, version, false AS offer, occurred_at,
              dispatch_event(job_events)::text AS body
), claimed_offer AS (
    UPDATE offer_events
       SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
     WHERE id = ANY(ARRAY(SELECT id FROM chosen))
    RETURNING id, job_id, version, true AS offer, occurred_at,
              dispatch_event(offer_events)::text AS body
)
SELECT * FROM claimed_job UNION ALL SELECT * FROM claimed_offer
""")


class ClaimOfJobParams(ClaimParams):
    job_id: UUID


# Right after a writer commits: that job's events only, through (job_id, version) and
# offer_events_unpublished (job_id), in the job's order.
CLAIM_UNPUBLISHED_OF_JOB: Query[ClaimOfJobParams, Claimed] = Query("""
WITH picked_job AS (
    SELECT id, job_id, version, occurred_at FROM job_events
     WHERE dispatch_relay_due(published_at, occurred_at, relayed_at, relay_claimed_until,
                              %(resend_seconds)s::float8)
       AND job_id = %(job_id)s
     ORDER BY job_id, version
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), picked_offer AS (
    SELECT id, job_id, version, occurred_at FROM offer_events
     WHERE dispatch_relay_due(published_at, occurred_at, relayed_at, relay_claimed_until,
                              %(resend_seconds)s::float8)
       AND job_id = %(job_id)s
     ORDER BY occurred_at, id
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), chosen AS (
    SELECT id FROM (
        SELECT id, job_id, version, false AS offer, occurred_at FROM picked_job
        UNION ALL
        SELECT id, job_id, version, true, occurred_at FROM picked_offer
    ) picked
     ORDER BY version, offer, occurred_at, id
     LIMIT %(batch_size)s
), claimed_job AS (
    UPDATE job_events
       SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
     WHERE id = ANY(ARRAY(SELECT id FROM chosen))
    RETURNING id, job_id, version, false AS offer, occurred_at,
              dispatch_event(job_events)::text AS body
), claimed_offer AS (
    UPDATE offer_events
       SET relay_claimed_until = now() + make_interval(secs => %(claim_seconds)s)
     WHERE id = ANY(ARRAY(SELECT id FROM chosen))
    RETURNING id, job_id, version, true AS offer, occurred_at,
              dispatch_event(offer_events)::text AS body
)
SELECT * FROM claimed_job UNION ALL SELECT * FROM claimed_offer
""")


class MarkRelayedParams(TypedDict):
    sent: list[UUID]
    claimed: list[UUID]


# The end of a pass: what SQS took is relayed; every claim of the pass is let go (of either
# table: ids are uuids, one table's never another's).
MARK_RELAYED: Query[MarkRelayedParams, None] = Query("""
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
""")


# The publisher: each job's events not yet on the bus, up to the version its message announced
# (one job or a batch's), job by job, each in the job's order (a version exists only once every
# earlier one committed: the job's row lock serialises its changes; offer events of a version
# are written while the job is at it).
class UnpublishedUpToParams(TypedDict):
    job_ids: list[UUID]
    versions: list[int]


class Body(TypedDict):
    body: str


UNPUBLISHED_UP_TO: Query[UnpublishedUpToParams, Body] = Query("""
WITH heads AS (
    SELECT * FROM unnest(%(job_ids)s::uuid[], %(versions)s::int[]) AS h(job_id, version)
)
SELECT body FROM (
    SELECT e.job_id, e.version, false AS offer, e.occurred_at, e.id,
           dispatch_event(e)::text AS body
      FROM heads h
      JOIN job_events e ON e.job_id = h.job_id AND e.version <= h.version
     WHERE e.published_at IS NULL
    UNION ALL
    SELECT o.job_id, o.version, true, o.occurred_at, o.id, dispatch_event(o)::text
      FROM heads h
      JOIN offer_events o ON o.job_id = h.job_id AND o.version <= h.version
     WHERE o.published_at IS NULL
) pending
 ORDER BY job_id, version, offer, occurred_at, id
""")


class IdsParams(TypedDict):
    ids: list[UUID]


# The one mark of "on the bus", for events of either table.
MARK_PUBLISHED: Query[IdsParams, None] = Query("""
WITH job AS (
    UPDATE job_events SET published_at = now() WHERE id = ANY(%(ids)s) AND published_at IS NULL
)
UPDATE offer_events SET published_at = now() WHERE id = ANY(%(ids)s) AND published_at IS NULL
""")


class Lag(TypedDict):
    seconds: float


# Age of the oldest event not yet on the bus, of either table: the outbox lag.
RELAY_LAG: Query[None, Lag] = Query("""
SELECT coalesce(extract(epoch FROM now() - least(
           (SELECT min(occurred_at) FROM job_events WHERE published_at IS NULL),
           (SELECT min(occurred_at) FROM offer_events WHERE published_at IS NULL))), 0)::float
       AS seconds
""")
