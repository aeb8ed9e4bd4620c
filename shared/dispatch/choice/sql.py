"""The SQL of the business's choice, one statement per move, each with the rule it keeps.

Who may hold a job is dispatch_holding's (migration 0049), as for the accept: the assign is
the accept's kind of statement, one conditional UPDATE whose WHERE clause is the business's
ownership and dispatch_holding's may_assign (the row's lock decides between two assigns, or an
assign and the auto-pick); when it matches nothing, ASSIGN_FAILURE_FACTS reads each cause of
may_assign by name and rules.assign_refusal names it. The database refuses the rest whoever
writes: jobs_choice_goes_to_an_applicant, job_applications_only_while_choosing.
"""

from typing import Any, TypedDict
from uuid import UUID

from dispatch.db import Answering, Query
from dispatch.jobs.sql import Change, JobAnswer


# The assign: the accept's claim (status, assignee, lease cut at the window's end, version), on
# the business's terms: the owner (a stranger hears NOT_FOUND), at the version it chose on (the
# auto-pick sends none: it chooses on the row), and may_assign. Its job.assigned event names
# who chose as the actor (the business, or the auto-pick).
class AssignFactsParams(TypedDict):
    job_id: UUID
    worker_id: str
    business_id: str
    version: int | None


class AssignParams(AssignFactsParams, Change):
    lease_seconds: int


class AssignJobParams(AssignParams, Answering):
    pass


ASSIGN_JOB: Query[AssignJobParams, JobAnswer] = Query("""
WITH changed AS (
    UPDATE jobs AS j
       SET status = 'assigned',
           assignee_id = %(worker_id)s,
           before_photo_id = NULL,  -- a retaken job starts without the last holder's evidence
           lease_expires_at = least(now() + make_interval(secs => %(lease_seconds)s), window_end),
           version = version + 1,
           updated_at = now()
     WHERE j.id = %(job_id)s
       AND j.business_id = %(business_id)s
       AND (SELECT h.may_assign
              FROM dispatch_holding(j, %(worker_id)s, %(version)s::integer) h)
    RETURNING j.*, dispatch_job_json(j) AS document
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


# Only on the failure path: the job's state, the ownership and each cause of may_assign.
class AssignFacts(TypedDict):
    status: str
    assignee_id: str | None
    owned: bool
    choice: bool
    claimable: bool
    window_open: bool
    at_version: bool
    applicant: bool
    not_blocked: bool
    has_skills: bool
    rated_enough: bool
    worker_free: bool


ASSIGN_FAILURE_FACTS: Query[AssignFactsParams, AssignFacts] = Query("""
SELECT j.status, j.assignee_id,
       j.business_id = %(business_id)s AS owned,
       h.choice, h.claimable, h.window_open, h.at_version, h.applicant, h.not_blocked,
       h.has_skills, h.rated_enough, h.worker_free
  FROM jobs j
 CROSS JOIN LATERAL dispatch_holding(j, %(worker_id)s, %(version)s::integer) h
 WHERE j.id = %(job_id)s
""")

# -- applications ------------------------------------------------------------------------------


# Apply: while dispatch_holding's may_apply holds (a business's choice, open, in its window,
# qualified, not blocked: job_applications_not_from_blocked refuses the rest), one application
# per worker and job (the primary key), taken up again after a withdrawal; a repeat while it
# stands changes nothing and answers the standing application, as long as the worker may still
# apply (blocked since, or the job no longer open: refused).
# The application and its event commit together, and given the caller's key, the key with its
# answer (a refusal records nothing: its answer is stored as a business error's).
class JobWorkerParams(TypedDict):
    job_id: UUID
    worker_id: str


class ApplyParams(JobWorkerParams, Answering):
    note: str | None


class Applied(TypedDict):
    allowed: bool
    answer: str | None


APPLY: Query[ApplyParams, Applied] = Query("""
WITH job AS (
    SELECT j.id, j.version FROM jobs j
     WHERE j.id = %(job_id)s
       AND (SELECT h.may_apply FROM dispatch_holding(j, %(worker_id)s) h)
), applied AS (
    INSERT INTO job_applications AS a (job_id, worker_id, note)
    SELECT id, %(worker_id)s, %(note)s FROM job
    ON CONFLICT (job_id, worker_id) DO UPDATE
       SET applied_at = now(), note = excluded.note, withdrawn_at = NULL
     WHERE a.withdrawn_at IS NOT NULL
    RETURNING a.job_id, a.worker_id, a.applied_at, dispatch_application_json(a) AS document
), event AS (
    INSERT INTO offer_events (job_id, type, version, actor, occurred_at, data)
    SELECT applied.job_id, 'application.created', job.version, applied.worker_id,
           applied.applied_at, applied.document::jsonb
      FROM applied, job
), answers AS (
    SELECT EXISTS (SELECT 1 FROM job) AS allowed,
           (CASE WHEN EXISTS (SELECT 1 FROM job) THEN  -- a repeat is answered only while allowed:
                 coalesce((SELECT document FROM applied), (SELECT dispatch_application_json(a)
                            FROM job_applications a
                           WHERE a.job_id = %(job_id)s AND a.worker_id = %(worker_id)s
                             AND a.withdrawn_at IS NULL))
            END)::text AS answer  -- an applicant since blocked, or a job since closed, is refused
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE answer IS NOT NULL AND %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")


# Only on the failure path: the job's status and each cause of may_apply.
class ApplyFacts(TypedDict):
    status: str
    not_blocked: bool
    choice: bool
    open: bool
    window_open: bool
    has_skills: bool
    rated_enough: bool


APPLY_FAILURE_FACTS: Query[JobWorkerParams, ApplyFacts] = Query("""
SELECT j.status,
       h.not_blocked, h.choice, h.open, h.window_open, h.has_skills, h.rated_enough
  FROM jobs j
 CROSS JOIN LATERAL dispatch_holding(j, %(worker_id)s) h
 WHERE j.id = %(job_id)s
""")


# Withdraw: the worker's standing application ends, with its event. Not by the worker holding
# the job (they release it instead). FOR SHARE on the job: an assign of this worker that
# commits first is seen here; one that comes later waits, then finds no application
# (jobs_choice_goes_to_an_applicant reads the committed state).
class Withdrawn(TypedDict):
    holds: bool | None
    applied: bool
    withdrawn: int


WITHDRAW: Query[JobWorkerParams, Withdrawn] = Query("""
WITH job AS (
    SELECT j.id, j.version, j.assignee_id IS NOT DISTINCT FROM %(worker_id)s AS holds
      FROM jobs j WHERE j.id = %(job_id)s
       FOR SHARE
), withdrawn AS (
    UPDATE job_applications a
       SET withdrawn_at = now()
      FROM job
     WHERE a.job_id = job.id AND a.worker_id = %(worker_id)s AND a.withdrawn_at IS NULL
       AND NOT job.holds
    RETURNING a.job_id, a.worker_id, a.withdrawn_at, job.version,
              dispatch_application_json(a) AS document
), event AS (
    INSERT INTO offer_events (job_id, type, version, actor, occurred_at, data)
    SELECT job_id, 'application.withdrawn', version, worker_id, withdrawn_at, document::jsonb
      FROM withdrawn
)
SELECT (SELECT holds FROM job) AS holds,
       EXISTS (SELECT 1 FROM job_applications a
                WHERE a.job_id = %(job_id)s AND a.worker_id = %(worker_id)s) AS applied,
       (SELECT count(*) FROM withdrawn) AS withdrawn
""")

# -- the business's view -------------------------------------------------------------------


# The job, when the caller may see its applicants: the owner, or ops.
class ApplicantsOfParams(TypedDict):
    job_id: UUID
    business_id: str
    ops: bool


class JobPlace(TypedDict):
    id: UUID
    lat: float
    lng: float


JOB_FOR_APPLICANTS: Query[ApplicantsOfParams, JobPlace] = Query("""
SELECT j.id, j.lat, j.lng FROM jobs j
 WHERE j.id = %(job_id)s AND (%(ops)s OR j.business_id = %(business_id)s)
""")


class JobIdParams(TypedDict):
    job_id: UUID


class WorkerId(TypedDict):
    worker_id: str


APPLICANT_IDS: Query[JobIdParams, WorkerId] = Query("""
SELECT a.worker_id FROM job_applications a
 WHERE a.job_id = %(job_id)s AND a.withdrawn_at IS NULL
""")


# Current applicants, earliest first, each with the record the business chooses on: the
# rating, the distance from the fresh position Redis gave (%(positions)s: none when unknown),
# completed jobs, jobs given back and leases that ran out on them (worker_records, kept by
# triggers as they happen: one row per applicant, however long their history), and whether
# they are free and qualified now (dispatch_holding).
class ApplicantsParams(TypedDict):
    job_id: UUID
    position_ids: list[str]
    lats: list[float]
    lngs: list[float]


class Document(TypedDict):
    document: dict[str, Any]


APPLICANTS: Query[ApplicantsParams, Document] = Query("""
SELECT row_to_json(listed) AS document
  FROM jobs j
  JOIN job_applications a ON a.job_id = j.id AND a.withdrawn_at IS NULL
  LEFT JOIN workers w ON w.id = a.worker_id
  LEFT JOIN worker_records rec ON rec.worker_id = a.worker_id
  CROSS JOIN LATERAL dispatch_holding(j, a.worker_id) h
  LEFT JOIN unnest(%(position_ids)s::text[], %(lats)s::float8[], %(lngs)s::float8[])
         AS p(worker_id, lat, lng) ON p.worker_id = a.worker_id
 CROSS JOIN LATERAL (
    SELECT a.worker_id,
           dispatch_time(a.applied_at) AS applied_at,
           a.note,
           w.rating::float8 AS rating,
           CASE WHEN p.worker_id IS NOT NULL  -- (dispatch_distance_m is not strict)
                THEN round(dispatch_distance_m(j.lat, j.lng, p.lat, p.lng)::numeric, 1)
           END AS distance_m,
           coalesce(rec.completed, 0) AS completed_jobs,
           coalesce(rec.released, 0) AS released,
           coalesce(rec.vanished, 0) AS vanished,
           NOT h.worker_free AS busy,
           h.qualified,
           j.assignee_id IS NOT DISTINCT FROM a.worker_id AS assigned
 ) listed  -- (not `applicant`: dispatch_holding has a column of that name)
 WHERE j.id = %(job_id)s
   AND h.not_blocked  -- a worker the business blocked is not shown
 ORDER BY a.applied_at, a.worker_id
""")

# -- the deadline (dispatch.choice.deadline, run by the lease sweeper) -----------------------


# Open choice jobs whose deadline passed, oldest deadline first (jobs_choice_due): every one
# with auto_pick (an applicant may have become free since the last pass), the others until
# their round's job.unfilled is written.
class DueChoicesParams(TypedDict):
    batch_size: int


class DueChoice(TypedDict):
    id: UUID
    version: int
    business_id: str
    auto_pick: bool | None


DUE_CHOICES: Query[DueChoicesParams, DueChoice] = Query("""
SELECT j.id, j.version, j.business_id, j.auto_pick
  FROM jobs j
 WHERE j.status = 'open' AND j.assignment = 'business_choice'
   AND j.choose_by <= now() AND j.window_end > now()
   AND (j.auto_pick
        OR NOT EXISTS (SELECT 1 FROM offer_events u
                        WHERE u.job_id = j.id AND u.version = j.version
                          AND u.type = 'job.unfilled'))
 ORDER BY j.choose_by
 LIMIT %(batch_size)s
""")

# The auto-pick's choice: the best current applicant who can be assigned now (dispatch_holding's
# may_assign, as ASSIGN_JOB then asks).
# Best = the highest damped rating (an unrated worker counts as the prior every rating starts
# from, 4.0), then the fewest jobs given back or vanished from (worker_records), then the
# earliest application.
BEST_APPLICANT: Query[JobIdParams, WorkerId] = Query("""
SELECT a.worker_id
  FROM jobs j
  JOIN job_applications a ON a.job_id = j.id AND a.withdrawn_at IS NULL
  LEFT JOIN workers w ON w.id = a.worker_id
  LEFT JOIN worker_records rec ON rec.worker_id = a.worker_id
 CROSS JOIN LATERAL dispatch_holding(j, a.worker_id) h
 WHERE j.id = %(job_id)s
   AND h.may_assign
 ORDER BY coalesce(w.rating, 4.0) DESC,
          coalesce(rec.released + rec.vanished, 0),
          a.applied_at, a.worker_id
 LIMIT 1
""")


# Nobody assigned by the deadline: job.unfilled, once per round, while the job is still open
# at that version (the business may still assign later; workers may still apply).
class UnfilledParams(TypedDict):
    job_id: UUID
    version: int
    actor: str


class EventId(TypedDict):
    id: UUID


CHOICE_UNFILLED: Query[UnfilledParams, EventId] = Query("""
INSERT INTO offer_events (job_id, type, version, actor, data)
SELECT j.id, 'job.unfilled', j.version, %(actor)s,
       jsonb_build_object(
           'waves', (SELECT count(*) FROM offer_waves w
                      WHERE w.job_id = j.id AND w.job_version = j.version),
           'offered', (SELECT count(*) FROM job_offers o
                        WHERE o.job_id = j.id AND o.job_version = j.version),
           'reason', CASE WHEN n.applicants = 0 THEN 'no_applicants' ELSE 'not_chosen' END,
           'applicants', n.applicants)
  FROM jobs j
 CROSS JOIN LATERAL (SELECT count(*)::int AS applicants FROM job_applications a
                      WHERE a.job_id = j.id AND a.withdrawn_at IS NULL) n
 WHERE j.id = %(job_id)s AND j.status = 'open' AND j.version = %(version)s
ON CONFLICT (job_id, version) WHERE type = 'job.unfilled' DO NOTHING
RETURNING id
""")
