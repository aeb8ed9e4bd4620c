"""Reads of jobs, with who may see what: the owning business, the assignee, ops."""

from typing import Any
from uuid import UUID

from dispatch.auth import Caller, Role
from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.events import Event
from dispatch.jobs import sql
from dispatch.jobs.models import (
    JOB_EVENT_MODELS,
    Job,
    JobChanged,
    JobEvents,
    NearbyJob,
    NearbyJobs,
)


def oversees(caller: Caller, job: Job) -> bool:
    """Ops, or the business that owns the job: they see all of it, its offer events too."""
    return caller.has(Role.OPS) or (caller.has(Role.BUSINESS) and job.business_id == caller.id)


def can_view(caller: Caller, job: Job) -> bool:
    return oversees(caller, job) or (caller.has(Role.WORKER) and job.assignee_id == caller.id)


def visible_job(conn: Connection, caller: Caller, job_id: UUID) -> Job:
    """The job, or NOT_FOUND when it does not exist or is not the caller's (never leak which)."""
    row = conn.execute(sql.JOB_BY_ID, {"job_id": job_id}).fetchone()
    job = Job.from_document(row["document"]) if row else None
    if job is None or not can_view(caller, job):
        raise DispatchError(Code.NOT_FOUND)
    return job


def job_events(conn: Connection, caller: Caller, job_id: UUID) -> JobEvents:
    """The job's events to pull after a gap in push: its business and ops lose nothing here;
    a worker also reads its offers at GET /workers/me/offers."""
    job = visible_job(conn, caller, job_id)
    params = {"job_id": job_id, "everything": oversees(caller, job), "caller_id": caller.id}
    rows = conn.execute(sql.EVENTS_OF_JOB, params).fetchall()
    return JobEvents(events=[event_of(row["document"]) for row in rows])


def event_of(document: dict[str, Any]) -> Event:
    """A change of the job as its own model (data: the Job), any other event as it is."""
    if document["type"] in JOB_EVENT_MODELS:
        return JobChanged.from_document(document)
    return Event.from_document(document)


def nearby_jobs(
    conn: Connection, worker_id: str, lat: float, lng: float, radius_m: float, limit: int
) -> NearbyJobs:
    """Open jobs within `radius_m`, nearest first, only those the worker qualifies for."""
    rows = conn.execute(
        sql.NEARBY_JOBS,
        {
            "lat": lat,
            "lng": lng,
            "worker_id": worker_id,
            "radius_m": radius_m,
            "limit": limit,
        },
    ).fetchall()
    return NearbyJobs(
        jobs=[
            NearbyJob.from_document({**row["document"], "distance_m": round(row["distance_m"], 1)})
            for row in rows
        ]
    )
