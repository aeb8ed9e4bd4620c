"""Commands that change jobs. Each is one conditional statement plus its event."""

from typing import Any
from uuid import UUID

from psycopg import errors

from dispatch.config import settings
from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.jobs import sql
from dispatch.jobs.models import FINISHED_STATUSES, LIVE_STATUSES, CreateJob, Job, JobStatus


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
            "event_type": "job.created",
            "actor": business_id,
        },
    ).fetchone()
    assert row is not None  # an INSERT without ON CONFLICT returns its row or raises
    return Job.from_row(row)


def accept_job(conn: Connection, job_id: UUID, worker_id: str, version: int | None) -> Job:
    params: dict[str, Any] = {
        "job_id": job_id,
        "worker_id": worker_id,
        "version": version,
        "lease_seconds": settings().lease_seconds,
        "event_type": "job.assigned",
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
    return Job.from_row(row)


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
