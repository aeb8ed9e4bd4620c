"""Commands that change jobs. Each is one conditional statement plus its event."""

from typing import Any
from uuid import UUID

from psycopg import errors

from dispatch.auth import Caller
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.jobs import geo, sql
from dispatch.jobs.lifecycle import MACHINE, PHOTO_SLOT_STATUS, Actor, Transition
from dispatch.jobs.models import (
    FINISHED_STATUSES,
    LIVE_STATUSES,
    CreateJob,
    Job,
    JobEventType,
    JobStatus,
    Photo,
    TransitionEvent,
)


def create_job(conn: Connection, business_id: str, spec: CreateJob) -> Job:
    row = conn.execute(
        sql.CREATE_JOB,
        {
            "business_id": business_id,
            "lat": spec.location.lat,
            "lng": spec.location.lng,
            "skills": spec.skills,
            "window_start": spec.window.start,
            "window_end": spec.window.end,
            "event_type": JobEventType.CREATED,
            "actor": business_id,
            **geo.cells_of(spec.location.lat, spec.location.lng),
        },
    ).fetchone()
    assert row is not None  # an INSERT without ON CONFLICT returns its row or raises
    return Job.from_document(row["document"])


def accept_job(conn: Connection, job_id: UUID, worker_id: str, version: int | None) -> Job:
    params: dict[str, Any] = {
        "job_id": job_id,
        "worker_id": worker_id,
        "version": version,
        "lease_seconds": settings().lease_seconds,
        "event_type": JobEventType.ASSIGNED,
        "actor": worker_id,
    }
    try:
        row = conn.execute(sql.ACCEPT_JOB, params).fetchone()
    except errors.UniqueViolation as error:
        # Two accepts by one worker on two jobs at once: the one-live-job index decided.
        if error.diag.constraint_name == "jobs_one_live_job_per_worker":
            raise DispatchError(Code.WORKER_BUSY) from error
        raise
    if row is None:
        raise DispatchError(_why_accept_failed(conn, params, version))
    return Job.from_document(row["document"])


def _why_accept_failed(conn: Connection, params: dict[str, Any], version: int | None) -> Code:
    job = conn.execute(sql.ACCEPT_FAILURE_JOB, params).fetchone()
    if job is None:
        return Code.NOT_FOUND
    status = JobStatus(job["status"])
    if status in FINISHED_STATUSES:
        return Code.JOB_UNAVAILABLE
    if status in LIVE_STATUSES and not job["lease_expired"]:
        # Tapping again on the job you already hold is not "taken by another worker".
        return Code.WORKER_BUSY if job["assignee_id"] == params["worker_id"] else Code.JOB_TAKEN
    if version is not None and job["version"] != version:
        return Code.VERSION_CONFLICT
    worker = conn.execute(sql.ACCEPT_FAILURE_WORKER, params).fetchone()
    assert worker is not None  # a SELECT without FROM always returns its one row
    if not worker["has_skills"]:
        return Code.SKILLS_MISSING
    if worker["worker_busy"]:
        return Code.WORKER_BUSY
    # Claimable again by now: someone else won and already gave it back. Still a lost race.
    return Code.JOB_TAKEN


def transition(
    conn: Connection, job_id: UUID, caller: Caller, event: TransitionEvent, version: int
) -> Job:
    move = MACHINE[event]
    if not caller.has(move.actor.role):
        raise DispatchError(Code.FORBIDDEN)
    params: dict[str, Any] = {
        "job_id": job_id,
        "target": move.target.value,
        "sources": [s.value for s in move.sources],
        "version": version,
        "actor_kind": move.actor.value,
        "actor": caller.id,
        "needs": move.needs.value if move.needs else None,
        "lease_seconds": settings().lease_seconds,
        "event_type": move.event_type,
    }
    row = conn.execute(sql.TRANSITION_JOB, params).fetchone()
    if row is None:
        raise DispatchError(_why_transition_failed(conn, params, move))
    return Job.from_document(row["document"])


def _why_transition_failed(conn: Connection, params: dict[str, Any], move: Transition) -> Code:
    facts = conn.execute(sql.TRANSITION_FAILURE_FACTS, params).fetchone()
    if facts is None:
        return Code.NOT_FOUND
    holds = (
        facts["assignee_id"] == params["actor"]
        if move.actor is Actor.ASSIGNEE
        else facts["business_id"] == params["actor"]
    )
    if not (holds or (move.actor is Actor.ASSIGNEE and facts["acted"])):
        return Code.NOT_FOUND  # never tell a stranger that the job exists
    if facts["version"] != params["version"]:
        return Code.VERSION_CONFLICT  # a stale view, or a lease that ran out and moved on
    if JobStatus(facts["status"]) not in move.sources:
        return Code.ILLEGAL_TRANSITION
    if not holds:
        return Code.VERSION_CONFLICT
    if move.needs is Photo.BEFORE and facts["before_photo_id"] is None:
        return Code.BEFORE_PHOTO_REQUIRED
    if move.needs is Photo.AFTER and facts["after_photo_id"] is None:
        return Code.AFTER_PHOTO_REQUIRED
    return Code.VERSION_CONFLICT  # it changed between our update and this read


def attach_photo(
    conn: Connection, job_id: UUID, worker_id: str, slot: Photo, photo_id: UUID
) -> Job:
    params: dict[str, Any] = {
        "job_id": job_id,
        "actor": worker_id,
        "slot": slot.value,
        "slot_status": PHOTO_SLOT_STATUS[slot].value,
        "photo_id": photo_id,
        "event_type": JobEventType.PHOTO_ATTACHED,
    }
    row = conn.execute(sql.ATTACH_PHOTO, params).fetchone()
    if row is None:
        raise DispatchError(*_why_attach_failed(conn, params, slot))
    return Job.from_document(row["document"])


def _why_attach_failed(
    conn: Connection, params: dict[str, Any], slot: Photo
) -> tuple[Code, list[dict[str, Any]]]:
    facts = conn.execute(sql.TRANSITION_FAILURE_FACTS, params).fetchone()
    if facts is None or facts["assignee_id"] != params["actor"]:
        return Code.NOT_FOUND, []
    if facts["status"] != params["slot_status"]:
        return Code.PHOTO_SLOT_CLOSED, []
    owner = conn.execute(sql.PHOTO_OWNER, params).fetchone()
    if owner is None or owner["owner_id"] != params["actor"]:
        return Code.NOT_FOUND, []
    other = facts["after_photo_id" if slot is Photo.BEFORE else "before_photo_id"]
    if other == params["photo_id"]:
        problem = "is already the job's other photo; the before and after photos must differ"
        return Code.VALIDATION_FAILED, [{"field": "photo_id", "problem": problem}]
    return Code.VERSION_CONFLICT, []  # it changed between our update and this read


SWEEPER = "system:lease-sweeper"


def reopen_expired(conn: Connection, batch_size: int) -> list[Job]:
    """Reopen one batch of expired assignments, each with its `job.reopened` event."""
    with conn.transaction():
        rows = conn.execute(
            sql.REOPEN_EXPIRED,
            {"batch_size": batch_size, "event_type": JobEventType.REOPENED, "actor": SWEEPER},
        ).fetchall()
    return [Job.from_document(row["document"]) for row in rows]
