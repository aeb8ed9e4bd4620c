"""The SQL of jobs, one statement per move, each with the invariant it protects.

The WHERE clause is the lock: Postgres serialises updates to one row, so of N concurrent
claimers exactly one matches and the rest match zero rows. No SELECT ... FOR UPDATE, no
advisory lock, no retry loop.

Every statement is written whole. A change writes its one event in the same statement (the
outbox: job_events_one_per_change makes a second impossible), and a change a caller asks for
also records the caller's idempotency key with its answer, so that the change, the event, the
key and the answer commit together in one round trip (a key already taken raises
idempotency_keys_pkey, and the statement undoes itself). Without a key (`idempotency.NO_KEY`:
the key's parameters NULL) nothing is recorded. The sweeps take no key.
"""

from datetime import datetime
from typing import Any, TypedDict
from uuid import UUID

from dispatch.db import Answering, Query


class JobAnswer(TypedDict):
    """A changed job's row: its document and, as text, the answer the caller gets."""

    document: dict[str, Any]
    answer: str


class Change(TypedDict):
    """What every change writes into its one event."""

    event_type: str
    actor: str


# A job is born open at version 1, with its `job.created` event.
class CreateJobParams(Change, Answering):
    business_id: str
    lat: float
    lng: float
    skills: list[str]
    window_start: datetime
    window_end: datetime
    min_rating: float | None
    assignment: str
    auto_pick: bool | None
    choose_within_s: int | None
    offer_first_to: str | None


CREATE_JOB: Query[CreateJobParams, JobAnswer] = Query("""
WITH changed AS (
    INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end, min_rating,
                      assignment, auto_pick, choose_within_s, choose_by, offer_first_to)
    VALUES (%(business_id)s, %(lat)s, %(lng)s, %(skills)s, %(window_start)s, %(window_end)s,
            %(min_rating)s, %(assignment)s, %(auto_pick)s, %(choose_within_s)s::integer,
            now() + make_interval(secs => %(choose_within_s)s::integer), %(offer_first_to)s)
    RETURNING *, dispatch_job_json(jobs) AS document
), event AS (  -- the change's one event (job_events_one_per_change), in the same statement
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
), answers AS (
    SELECT *, document::text AS answer FROM changed
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")

# The job's statuses as sets (a worker holds it: live; nothing moves it any more: finished;
# unfinished; untaken) are written once, in SQL: dispatch_live, dispatch_finished,
# dispatch_unfinished and dispatch_untaken (migration 0053), inlined where they are called, so
# a statement still proves the partial indexes written with the same set
# (tests/integration/test_one_source.py holds them to models.JobStatus's sets and to the
# indexes).

# Who may hold a job is written once, in SQL: dispatch_holding (migration 0049), one row of
# named booleans per (job, worker), each cause once and each path's rule (may_accept,
# may_assign, may_apply, may_hold, may_see) their conjunction. The accept, the assign, the
# apply, the auto-pick, the applicant list, the offers' candidates and dispatch_nearby read it;
# the failure reads below name a refused command's causes from the same columns.


# First come's hot path: the accept, an ordinary plpgsql function written whole in migration
# 0052 (dispatch_accept_job; given the caller's idempotency key, it also records the key with
# its answer): Postgres keeps its plan per server connection without a prepared statement
# (which RDS Proxy would pin the connection for). The UPDATE's WHERE clause is the lock: of N
# concurrent claimers exactly one matches, the rest match zero rows.
class AcceptParams(Change):
    job_id: UUID
    worker_id: str
    version: int | None
    lease_seconds: int


class AcceptJobParams(AcceptParams, Answering):
    pass


ACCEPT_JOB: Query[AcceptJobParams, JobAnswer] = Query("""
SELECT * FROM dispatch_accept_job(
    p_actor => %(actor)s::text, p_event_type => %(event_type)s::text,
    p_job_id => %(job_id)s::uuid, p_lease_seconds => %(lease_seconds)s::integer,
    p_version => %(version)s::integer, p_worker_id => %(worker_id)s::text,
    p_principal => %(principal)s::text, p_key => %(key)s::text,
    p_fingerprint => %(fingerprint)s::text, p_answer_status => %(answer_status)s::integer)
""")


# Only on the failure path: one read of the job's state and of each cause of may_accept, by
# name, from dispatch_holding; rules.accept_refusal names the cause.
class HolderParams(TypedDict):
    job_id: UUID
    worker_id: str
    version: int | None


class AcceptFacts(TypedDict):
    status: str
    assignee_id: str | None
    first_come: bool
    not_blocked: bool
    claimable: bool
    window_open: bool
    at_version: bool
    has_skills: bool
    rated_enough: bool
    worker_free: bool


ACCEPT_FAILURE_FACTS: Query[HolderParams, AcceptFacts] = Query("""
SELECT j.status, j.assignee_id,
       h.first_come, h.not_blocked, h.claimable, h.window_open, h.at_version,
       h.has_skills, h.rated_enough, h.worker_free
  FROM jobs j
 CROSS JOIN LATERAL dispatch_holding(j, %(worker_id)s, %(version)s::integer) h
 WHERE j.id = %(job_id)s
""")


# A lost race is a yes (migration 0057), written on the accept's failure path only, once the
# refusal is JOB_TAKEN: the loser is recorded (job_races_lost, one row per job and worker: a
# second tap or a retry writes nothing new) when they lost the race (dispatch_lost_race: they
# held an offer of the round another worker won, one rule with the table's guard). Anyone else
# (no offer, or an offer of a round nobody won) writes nothing; the database refuses them
# anyway (job_races_lost_held_an_offer, job_races_lost_only_when_taken). The winner's path
# (ACCEPT_JOB) writes nothing here.
class LostRaceParams(TypedDict):
    job_id: UUID
    worker_id: str


RECORD_LOST_RACE: Query[LostRaceParams, None] = Query("""
INSERT INTO job_races_lost (job_id, worker_id)
SELECT %(job_id)s, %(worker_id)s
 WHERE dispatch_lost_race(%(job_id)s::uuid, %(worker_id)s::text)
    ON CONFLICT DO NOTHING
""")


class JobIdParams(TypedDict):
    job_id: UUID


class JobDocument(TypedDict):
    document: dict[str, Any]


JOB_BY_ID: Query[JobIdParams, JobDocument] = Query(
    "SELECT dispatch_job_json(j) AS document FROM jobs j WHERE j.id = %(job_id)s"
)


# The end of a past holder's last hold of the job: the change right after the worker held it
# (every change writes one event, versions 1, 2, 3, ... : job_events_one_per_change), when that
# change left the job with no holder (released, reopened, cancelled): the worker reads it, it is
# the news. When another worker took over a lapsed lease, the takeover names the next holder,
# which a past holder never reads: its view ends at its own last event, whose lease has run out.
# A past holder reads the job as that event left it (its data) and the events up to its version.
class JobWorkerParams(TypedDict):
    job_id: UUID
    worker_id: str


class HoldEnded(TypedDict):
    event: dict[str, Any]
    version: int


HOLD_ENDED: Query[JobWorkerParams, HoldEnded] = Query("""
SELECT CASE WHEN n.data->>'assignee_id' IS NULL THEN dispatch_event(n) ELSE dispatch_event(h) END
           AS event,
       CASE WHEN n.data->>'assignee_id' IS NULL THEN n.version ELSE h.version END AS version
  FROM job_events h
  JOIN job_events n ON n.job_id = h.job_id AND n.version = h.version + 1
 WHERE h.job_id = %(job_id)s
   AND h.data->>'assignee_id' = %(worker_id)s
   AND n.data->>'assignee_id' IS DISTINCT FROM %(worker_id)s
 ORDER BY h.version DESC
 LIMIT 1
""")


# A job's events to pull after a gap in push: its changes, and of its offer events (offers,
# applications, unfilled rounds, back to choice) all for its business and ops (`everything`),
# those naming the worker for a worker; for a past holder only up to the end of its hold
# (`through`, HOLD_ENDED's version; NULL: all). In version order; within a version the change
# first, then the rest as written.
class EventsOfJobParams(TypedDict):
    job_id: UUID
    through: int | None
    everything: bool
    caller_id: str


EVENTS_OF_JOB: Query[EventsOfJobParams, JobDocument] = Query("""
SELECT document FROM (
    SELECT dispatch_event(e) AS document, e.version, 0 AS after_the_change, e.id
      FROM job_events e
     WHERE e.job_id = %(job_id)s
       AND e.version <= coalesce(%(through)s::integer, e.version)
    UNION ALL
    SELECT dispatch_event(o), o.version, 1, o.id
      FROM offer_events o
     WHERE o.job_id = %(job_id)s
       AND (%(everything)s OR o.data->>'worker_id' = %(caller_id)s)
       AND o.version <= coalesce(%(through)s::integer, o.version)
) heard
ORDER BY version, after_the_change, id
""")


# A transition: one conditional UPDATE keyed on the id, the allowed source statuses, the
# version the actor holds (the fencing token), the actor, and the photo the target needs.
# Going back to open or to cancelled clears the assignee, the lease and the before photo
# (evidence belongs to an assignment); assigned (check-in) renews the lease, to the window's
# end at most; any other target ends it. Check-in and start happen only while the window lasts
# (`within_window`). jobs_photo_gate, the photo triggers and jobs_held_only_within_the_window
# refuse the same things again.
class TransitionParams(Change):
    job_id: UUID
    target: str
    sources: list[str]
    version: int
    actor_kind: str
    needs: str | None
    within_window: bool
    lease_seconds: int


class TransitionJobParams(TransitionParams, Answering):
    pass


TRANSITION_JOB: Query[TransitionJobParams, JobAnswer] = Query("""
WITH changed AS (
    UPDATE jobs
       SET status = %(target)s,
           assignee_id = CASE WHEN dispatch_untaken(%(target)s) THEN NULL
                              ELSE assignee_id END,
           before_photo_id = CASE WHEN dispatch_untaken(%(target)s) THEN NULL
                                  ELSE before_photo_id END,
           lease_expires_at = CASE WHEN %(target)s = 'assigned'
                                   THEN least(now() + make_interval(secs => %(lease_seconds)s),
                                              window_end) END,
           version = version + 1,
           updated_at = now()
     WHERE id = %(job_id)s
       AND status = ANY(%(sources)s::text[])
       AND version = %(version)s
       AND CASE %(actor_kind)s WHEN 'assignee' THEN assignee_id = %(actor)s
                               ELSE business_id = %(actor)s END
       AND (%(needs)s::text IS DISTINCT FROM 'before' OR before_photo_id IS NOT NULL)
       AND (%(needs)s::text IS DISTINCT FROM 'after' OR after_photo_id IS NOT NULL)
       AND (NOT %(within_window)s OR window_end > now())
    RETURNING *, dispatch_job_json(jobs) AS document
), event AS (  -- the change's one event (job_events_one_per_change), in the same statement
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
), answers AS (
    SELECT *, document::text AS answer FROM changed
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")


# Only on the failure path of a transition or a photo attach: the job as the caller may know it.
# `acted` tells whether the caller ever acted on the job (a past assignee may learn that it
# moved on; a stranger only ever hears NOT_FOUND); `photo_owner`, whose photo was sent.
class FailureFactsParams(TypedDict):
    job_id: UUID
    actor: str
    photo_id: UUID | None


class TransitionFacts(TypedDict):
    status: str
    version: int
    assignee_id: str | None
    business_id: str
    before_photo_id: UUID | None
    after_photo_id: UUID | None
    rating: int | None
    window_ended: bool
    acted: bool
    photo_owner: str | None


TRANSITION_FAILURE_FACTS: Query[FailureFactsParams, TransitionFacts] = Query("""
SELECT j.status, j.version, j.assignee_id, j.business_id,
       j.before_photo_id, j.after_photo_id, j.rating, j.window_end <= now() AS window_ended,
       EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.actor = %(actor)s) AS acted,
       (SELECT p.owner_id FROM photos p WHERE p.id = %(photo_id)s::uuid) AS photo_owner
  FROM jobs j WHERE j.id = %(job_id)s
""")


# Attach a photo to its slot: the caller holds the job, the slot is open (before: assigned,
# after: in progress), the photo is the caller's, and it is not already the other photo.
class AttachParams(Change):
    job_id: UUID
    slot: str
    slot_status: str
    photo_id: UUID


class AttachPhotoParams(AttachParams, Answering):
    pass


ATTACH_PHOTO: Query[AttachPhotoParams, JobAnswer] = Query("""
WITH changed AS (
    UPDATE jobs
       SET before_photo_id = CASE WHEN %(slot)s = 'before' THEN %(photo_id)s::uuid
                                  ELSE before_photo_id END,
           after_photo_id = CASE WHEN %(slot)s = 'after' THEN %(photo_id)s::uuid
                                 ELSE after_photo_id END,
           version = version + 1,
           updated_at = now()
     WHERE id = %(job_id)s
       AND assignee_id = %(actor)s
       AND status = %(slot_status)s
       AND EXISTS (SELECT 1 FROM photos p WHERE p.id = %(photo_id)s AND p.owner_id = %(actor)s)
       AND %(photo_id)s::uuid IS DISTINCT FROM
           (CASE WHEN %(slot)s = 'before' THEN after_photo_id ELSE before_photo_id END)
    RETURNING *, dispatch_job_json(jobs) AS document
), event AS (  -- the change's one event (job_events_one_per_change), in the same statement
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
), answers AS (
    SELECT *, document::text AS answer FROM changed
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")


# Rate the work: the owning business, once the job is completed, once (jobs_rated_once). The
# worker's count and sum of stars move in the same statement (their rating is generated).
class RateParams(Change):
    job_id: UUID
    stars: int


class RateJobParams(RateParams, Answering):
    pass


RATE_JOB: Query[RateJobParams, JobAnswer] = Query("""
WITH changed AS (
    UPDATE jobs
       SET rating = %(stars)s,
           version = version + 1,
           updated_at = now()
     WHERE id = %(job_id)s
       AND business_id = %(actor)s
       AND status = 'completed'
       AND rating IS NULL
    RETURNING *, dispatch_job_json(jobs) AS document
), event AS (  -- the change's one event (job_events_one_per_change), in the same statement
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
), rated AS (
    INSERT INTO workers (id, ratings, stars)
    SELECT assignee_id, 1, %(stars)s FROM changed
    ON CONFLICT (id) DO UPDATE
       SET ratings = workers.ratings + 1, stars = workers.stars + excluded.stars,
           updated_at = now()
), answers AS (  -- the answer is the rating, not the job
    SELECT *, (SELECT row_to_json(rated)
                 FROM (SELECT id AS job_id, assignee_id AS worker_id, rating AS stars) rated
              )::text AS answer
      FROM changed
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")


# The sweeper: a batch of expired assignments, claimed with SKIP LOCKED so that overlapping
# sweepers never wait for or double-process each other, reopened by a conditional UPDATE that
# checks the lease again (never read-then-write: the WHERE decides, as River's rescuer learned).
# The batch is an array, computed once (an InitPlan): as a joined sub-query the planner, guessing
# one expired lease among millions of jobs, re-ran its LIMIT per outer row and one "batch of 100"
# reopened thousands (issue 35). A batch is at most %(batch_size)s whatever the table holds.
# Only while the window lasts: a job nobody may take any more expires instead (below).
class SweepParams(Change):
    batch_size: int


REOPEN_EXPIRED: Query[SweepParams, JobAnswer] = Query("""
WITH changed AS (
    UPDATE jobs j
       SET status = 'open',
           assignee_id = NULL,
           before_photo_id = NULL,
           lease_expires_at = NULL,
           version = j.version + 1,
           updated_at = now()
     WHERE j.id = ANY(ARRAY(
            SELECT id
              FROM jobs
             WHERE status = 'assigned' AND lease_expires_at <= now() AND window_end > now()
             ORDER BY lease_expires_at
             LIMIT %(batch_size)s
               FOR UPDATE SKIP LOCKED))
       AND j.status = 'assigned'
       AND j.lease_expires_at <= now()
       AND j.window_end > now()
    RETURNING j.*, dispatch_job_json(j) AS document
), event AS (  -- the change's one event (job_events_one_per_change), in the same statement
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
)
SELECT *, document::text AS answer FROM changed
""")

# Windows that ended: an open job can no longer be taken, nor can an assigned one go on (its
# lease ended with the window at the latest, and check-in and start are over); the sweeper
# makes that visible as `expired` (jobs_expired_only_after_the_window), with one job.expired
# event, never a job.reopened (reopening would offer a job nobody may take). The lease test
# is implied by the window's (jobs_lease_within_window) and lets the planner use
# jobs_lease_expiry. A batch is an array computed once, as above.
EXPIRE_ENDED: Query[SweepParams, JobAnswer] = Query("""
WITH changed AS (
    UPDATE jobs j
       SET status = 'expired',
           assignee_id = NULL,
           before_photo_id = NULL,
           lease_expires_at = NULL,
           version = j.version + 1,
           updated_at = now()
     WHERE j.id = ANY(ARRAY(
            SELECT id
              FROM jobs
             WHERE (status = 'open' OR (status = 'assigned' AND lease_expires_at <= now()))
               AND window_end <= now()
             ORDER BY window_end
             LIMIT %(batch_size)s
               FOR UPDATE SKIP LOCKED))
       AND (j.status = 'open' OR (j.status = 'assigned' AND j.lease_expires_at <= now()))
       AND j.window_end <= now()
    RETURNING j.*, dispatch_job_json(j) AS document
), event AS (  -- the change's one event (job_events_one_per_change), in the same statement
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
)
SELECT *, document::text AS answer FROM changed
""")


# Open jobs within %(radius_m)s of a point that the worker qualifies for, nearest first:
# dispatch_nearby (migrations 0013, 0049: the filter is dispatch_holding's may_see) walks the
# nearest-neighbour index of open jobs and stops
# once it has proved its answer. One statement, exact in great-circle metres, no extension.
class NearbyParams(TypedDict):
    lat: float
    lng: float
    radius_m: float
    worker_id: str
    limit: int


class NearbyRow(TypedDict):
    document: dict[str, Any]
    distance_m: float


NEARBY_JOBS: Query[NearbyParams, NearbyRow] = Query("""
SELECT document, distance_m
  FROM dispatch_nearby(%(lat)s, %(lng)s, %(radius_m)s, %(worker_id)s, %(limit)s)
""")
