"""Commands that change jobs. Each is one conditional statement plus its event; given the
caller's idempotency key, the same statement records the key with its answer (one round
trip), and a change that matched nothing reads why, once."""

import json
from uuid import UUID

from psycopg import errors

from dispatch.auth import Caller
from dispatch.config import settings
from dispatch.db import Connection, Query
from dispatch.errors import Code, DispatchError
from dispatch.idempotency import KeyedRequest, answering
from dispatch.jobs import photos, rules, sql
from dispatch.jobs.lifecycle import MACHINE, PHOTO_SLOT_STATUS
from dispatch.jobs.models import Job, JobEventType, JobRating, Photo, TransitionEvent
from dispatch.jobs.requests import CreateJob


def create_job(
    conn: Connection, business_id: str, spec: CreateJob, key: KeyedRequest | None = None
) -> Job:
    params: sql.CreateJobParams = {
        "business_id": business_id,
        "lat": spec.location.lat,
        "lng": spec.location.lng,
        "skills": spec.skills,
        "window_start": spec.window.start,
        "window_end": spec.window.end,
        "min_rating": spec.min_rating,
        "assignment": spec.assignment.value,
        "auto_pick": spec.auto_pick,
        "choose_within_s": spec.choose_within_s,
        "offer_first_to": spec.offer_first_to,
        "event_type": JobEventType.CREATED,
        "actor": business_id,
        **answering(key, 201),
    }
    row = sql.CREATE_JOB.one(conn, params)
    assert row is not None  # an INSERT without ON CONFLICT returns its row or raises
    return Job.from_document(row["document"], row["answer"])


def accept_job(
    conn: Connection,
    job_id: UUID,
    worker_id: str,
    version: int | None,
    key: KeyedRequest | None = None,
) -> Job:
    params: sql.AcceptParams = {
        "job_id": job_id,
        "worker_id": worker_id,
        "version": version,
        "lease_seconds": settings().lease_seconds,
        "event_type": JobEventType.ASSIGNED,
        "actor": worker_id,
    }
    try:
        row = sql.ACCEPT_JOB.one(conn, {**params, **answering(key, 200)})
    except errors.UniqueViolation as error:
        # Two accepts by one worker on two jobs at once: the one-live-job index decided.
        if error.diag.constraint_name == "jobs_one_live_job_per_worker":
            raise DispatchError(Code.WORKER_BUSY) from error
        raise
    except errors.CheckViolation as error:
        # Blocked by the business at the same instant: the database's own guard decided.
        if error.diag.constraint_name == "jobs_never_to_a_blocked_worker":
            raise DispatchError(Code.BLOCKED_BY_BUSINESS) from error
        raise
    if row is None:
        facts = sql.ACCEPT_FAILURE_FACTS.one(conn, params)
        refusal = rules.accept_refusal(facts, worker_id)
        if refusal is Code.JOB_TAKEN:
            # A lost race is a yes: recorded for a worker who held an offer of the round that
            # was won (its own statement, committed though the answer is a 409).
            sql.RECORD_LOST_RACE.run(conn, {"job_id": job_id, "worker_id": worker_id})
        raise DispatchError(refusal)
    return Job.from_document(row["document"], row["answer"])


def transition(
    conn: Connection,
    job_id: UUID,
    caller: Caller,
    event: TransitionEvent,
    version: int,
    key: KeyedRequest | None = None,
) -> Job:
    move = MACHINE[event]
    if not caller.has(move.actor.role):
        raise DispatchError(Code.FORBIDDEN)
    params: sql.TransitionParams = {
        "job_id": job_id,
        "target": move.target.value,
        "sources": [s.value for s in move.sources],
        "version": version,
        "actor_kind": move.actor.value,
        "actor": caller.id,
        "needs": move.needs.value if move.needs else None,
        "within_window": move.within_window,
        "lease_seconds": settings().lease_seconds,
        "event_type": move.event_type,
    }
    row = sql.TRANSITION_JOB.one(conn, {**params, **answering(key, 200)})
    if row is None:
        facts = sql.TRANSITION_FAILURE_FACTS.one(
            conn, {"job_id": job_id, "actor": caller.id, "photo_id": None}
        )
        raise DispatchError(rules.transition_refusal(facts, caller.id, version, move))
    return Job.from_document(row["document"], row["answer"])


def attach_photo(
    conn: Connection,
    job_id: UUID,
    worker_id: str,
    slot: Photo,
    photo_id: UUID,
    key: KeyedRequest | None = None,
) -> Job:
    params: sql.AttachParams = {
        "job_id": job_id,
        "actor": worker_id,
        "slot": slot.value,
        "slot_status": PHOTO_SLOT_STATUS[slot].value,
        "photo_id": photo_id,
        "event_type": JobEventType.PHOTO_ATTACHED,
    }
    # The upload is looked at first (a HEAD, outside any transaction); when it is not right
    # the statement is not sent, and the refusal still names the job's own causes first.
    upload = photos.upload_refusal(conn, worker_id, photo_id)
    row = None if upload else sql.ATTACH_PHOTO.one(conn, {**params, **answering(key, 200)})
    if row is None:
        facts = sql.TRANSITION_FAILURE_FACTS.one(
            conn, {"job_id": job_id, "actor": worker_id, "photo_id": photo_id}
        )
        slot_status = PHOTO_SLOT_STATUS[slot]
        refusal = rules.attach_refusal(facts, worker_id, photo_id, slot, slot_status, upload)
        raise DispatchError(*refusal)
    return Job.from_document(row["document"], row["answer"])


def rate_job(
    conn: Connection,
    job_id: UUID,
    business_id: str,
    stars: int,
    key: KeyedRequest | None = None,
) -> JobRating:
    params: sql.RateParams = {
        "job_id": job_id,
        "actor": business_id,
        "stars": stars,
        "event_type": JobEventType.RATED,
    }
    # Two ratings at once: the second waits for the first's row lock, then its WHERE sees the
    # rating and matches nothing (jobs_rated_once guards every other writer).
    row = sql.RATE_JOB.one(conn, {**params, **answering(key, 201)})
    if row is None:
        facts = sql.TRANSITION_FAILURE_FACTS.one(
            conn, {"job_id": job_id, "actor": business_id, "photo_id": None}
        )
        raise DispatchError(rules.rating_refusal(facts, business_id))
    return JobRating.from_document(json.loads(row["answer"]), row["answer"])


SWEEPER = "system:lease-sweeper"


def reopen_expired(conn: Connection, batch_size: int) -> list[Job]:
    """Reopen one batch of expired assignments, each with its `job.reopened` event."""
    return _sweep(conn, sql.REOPEN_EXPIRED, JobEventType.REOPENED, batch_size)


def expire_ended(conn: Connection, batch_size: int) -> list[Job]:
    """Expire one batch of jobs whose window ended and that nobody holds (`job.expired`)."""
    return _sweep(conn, sql.EXPIRE_ENDED, JobEventType.EXPIRED, batch_size)


def _sweep(
    conn: Connection,
    statement: Query[sql.SweepParams, sql.JobAnswer],
    event_type: JobEventType,
    batch_size: int,
) -> list[Job]:
    with conn.transaction():
        rows = statement.all(
            conn, {"batch_size": batch_size, "event_type": event_type, "actor": SWEEPER}
        )
    return [Job.from_document(row["document"], row["answer"]) for row in rows]
