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
    """The job, or NOT_FOUND when it does not exist or is not the caller's (never leak which).
    A worker that held it once reads it as the end of its hold left it."""
    return view_of(conn, caller, job_id)[0]


def job_events(conn: Connection, caller: Caller, job_id: UUID) -> JobEvents:
    """The job's events to pull after a gap in push: its business and ops lose nothing here;
    a worker also reads its offers at GET /workers/me/offers; a past holder reads them up to
    the end of its hold, nothing of later holders."""
    job, through = view_of(conn, caller, job_id)
    params: sql.EventsOfJobParams = {
        "job_id": job_id,
        "everything": oversees(caller, job),
        "caller_id": caller.id,
        "through": through,
    }
    rows = sql.EVENTS_OF_JOB.all(conn, params)
    return JobEvents(events=[event_of(row["document"]) for row in rows])


def view_of(conn: Connection, caller: Caller, job_id: UUID) -> tuple[Job, int | None]:
    """What the caller may read of the job: the job now (and every event: None), or for a
    worker whose hold ended the job as that end left it and the last version it may read.
    NOT_FOUND for anyone else (never leak which)."""
    row = sql.JOB_BY_ID.one(conn, {"job_id": job_id})
    if row is None:
        raise DispatchError(Code.NOT_FOUND)
    job = Job.from_document(row["document"])
    if can_view(caller, job):
        return job, None
    if caller.has(Role.WORKER):
        ended = sql.HOLD_ENDED.one(conn, {"job_id": job_id, "worker_id": caller.id})
        if ended is not None:
            return Job.from_document(ended["event"]["data"]), ended["version"]
    raise DispatchError(Code.NOT_FOUND)


def event_of(document: dict[str, Any]) -> Event:
    """A change of the job as its own model (data: the Job), any other event as it is."""
    if document["type"] in JOB_EVENT_MODELS:
        return JobChanged.from_document(document)
    return Event.from_document(document)


def nearby_jobs(
    conn: Connection, worker_id: str, lat: float, lng: float, radius_m: float, limit: int
) -> NearbyJobs:
    """Open jobs within `radius_m`, nearest first, only those the worker qualifies for."""
    rows = sql.NEARBY_JOBS.all(
        conn,
        {"lat": lat, "lng": lng, "worker_id": worker_id, "radius_m": radius_m, "limit": limit},
    )
    return NearbyJobs(
        jobs=[
            NearbyJob.from_document({**row["document"], "distance_m": round(row["distance_m"], 1)})
            for row in rows
        ]
    )
