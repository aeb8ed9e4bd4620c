"""Reads of jobs, with who may see what: the owning business, the assignee, ops."""

import math
from typing import Any
from uuid import UUID

from dispatch.auth import Caller, Role
from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.events import JobChanged, JobEvents
from dispatch.jobs import geo, sql
from dispatch.jobs.models import Job, NearbyJob, NearbyJobs


def can_view(caller: Caller, job: Job) -> bool:
    return (
        caller.has(Role.OPS)
        or (caller.has(Role.BUSINESS) and job.business_id == caller.id)
        or (caller.has(Role.WORKER) and job.assignee_id == caller.id)
    )


def visible_job(conn: Connection, caller: Caller, job_id: UUID) -> Job:
    """The job, or NOT_FOUND when it does not exist or is not the caller's (never leak which)."""
    row = conn.execute(sql.JOB_BY_ID, {"job_id": job_id}).fetchone()
    job = Job.from_document(row["document"]) if row else None
    if job is None or not can_view(caller, job):
        raise DispatchError(Code.NOT_FOUND)
    return job


def job_events(conn: Connection, caller: Caller, job_id: UUID) -> JobEvents:
    visible_job(conn, caller, job_id)
    rows = conn.execute(sql.EVENTS_OF_JOB, {"job_id": job_id}).fetchall()
    return JobEvents(events=[JobChanged.from_document(row["document"]) for row in rows])


# A one-shot search over the coarse covering is taken when it is expected to read fewer rows
# than this (see nearby_jobs); 0 turns the shortcut off.
SPARSE_ROWS = 500


def nearby_jobs(
    conn: Connection, worker_id: str, lat: float, lng: float, radius_m: float, limit: int
) -> NearbyJobs:
    """Open jobs within `radius_m`, nearest first, only those whose skills the worker has.

    Band after band of rings from the nearest, each through the cell index; it stops once
    `limit` jobs are in hand and nothing in the next band could be nearer than the last.
    Where the first band shows the place is sparse, one query over the coarse cells covering
    the whole circle replaces the walk: in open country, most fine bands would hold nothing.
    """

    def search(resolution: int, cells: list[int]) -> list[dict[str, Any]]:
        return conn.execute(
            sql.NEARBY_JOBS[resolution],
            {
                "lat": lat,
                "lng": lng,
                "cells": cells,
                "worker_id": worker_id,
                "radius_m": radius_m,
                "limit": limit,
            },
        ).fetchall()

    found: list[dict[str, Any]] = []

    def reach() -> float:
        """Once `limit` jobs are in hand, only nearer ones than the last can change the answer."""
        return found[-1]["distance_m"] if len(found) == limit else radius_m

    bands = geo.ring_bands(lat, lng, radius_m, reach)
    for band, (resolution, cells, beyond_m) in enumerate(bands):
        rows = search(resolution, cells)
        found = sorted(found + rows, key=lambda row: row["distance_m"])[:limit]
        if len(found) == limit and found[-1]["distance_m"] <= beyond_m:
            break
        if band == 0 and resolution > geo.COARSEST and len(rows) < limit:
            cover, cover_m2 = geo.covering(lat, lng, radius_m, geo.COARSEST)
            # Every job of the first band within the radius is in `rows` (fewer than limit).
            # (At least a square metre: a radius of 5e-324 m squares to zero. Found by fuzzing.)
            seen_m2 = max(1.0, min(geo.area_m2(cells), math.pi * radius_m**2))
            if len(rows) * cover_m2 / seen_m2 < SPARSE_ROWS:
                found = search(geo.COARSEST, cover)  # exact on its own: the whole circle
                break
    return NearbyJobs(
        jobs=[
            NearbyJob.from_document({**row["document"], "distance_m": round(row["distance_m"], 1)})
            for row in found
        ]
    )
