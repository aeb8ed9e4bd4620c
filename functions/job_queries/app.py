"""GET /jobs/nearby for workers; GET /jobs/{job_id} and GET /jobs/{job_id}/events for the owner,
the assignee and ops."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from dispatch import db
from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http.openapi import READ, answers
from dispatch.http.resolver import DispatchResolver, entrypoint
from dispatch.jobs import queries
from dispatch.jobs.models import Job, JobEvents, NearbyJobs
from dispatch.models import ApiId
from dispatch.workers import locations

app = DispatchResolver()
READERS = {Role.BUSINESS, Role.WORKER, Role.OPS}


# Registered before /jobs/<job_id>, so that "nearby" is never read as a job id.
@app.endpoint(
    "GET",
    "/jobs/nearby",
    roles={Role.WORKER},
    operation_id="listNearbyJobs",
    responses=answers(200, NearbyJobs, *READ),
    summary="Open jobs near a place, nearest first",
)
def nearby(
    lat: Annotated[float, Query(ge=-90, le=90)],
    lng: Annotated[float, Query(ge=-180, le=180)],
    radius_m: Annotated[float, Query(gt=0, le=50_000)] = 3_000,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    here: Annotated[bool, Query()] = True,
) -> Response[Any]:
    """`lat` and `lng` are where I am, and the read is also my position report, unless
    `here=false` (a search around another place)."""
    worker = app.caller
    found = db.run(lambda conn: queries.nearby_jobs(conn, worker.id, lat, lng, radius_m, limit))
    if here:
        locations.report_with_a_read(worker.id, lat, lng)
    return app.answer(found)


@app.endpoint(
    "GET",
    "/jobs/<job_id>",
    roles=READERS,
    operation_id="getJob",
    responses=answers(200, Job, *READ, Code.NOT_FOUND),
    summary="Read a job",
)
def get_job(job_id: ApiId) -> Response[Any]:
    return app.answer(db.run(lambda conn: queries.visible_job(conn, app.caller, job_id)))


@app.endpoint(
    "GET",
    "/jobs/<job_id>/events",
    roles=READERS,
    operation_id="listJobEvents",
    responses=answers(200, JobEvents, *READ, Code.NOT_FOUND),
    summary="A job's events in version order, to pull after a gap in push",
)
def get_job_events(job_id: ApiId) -> Response[Any]:
    return app.answer(db.run(lambda conn: queries.job_events(conn, app.caller, job_id)))


lambda_handler = entrypoint(app)
