"""Reads for the operations console (role ops): jobs and fresh workers in a box on the map,
the event stream after a cursor, and the summary."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from dispatch import db
from dispatch.auth import Role
from dispatch.errors import Code, DispatchError
from dispatch.http.openapi import READ, SIGNED_IN, answers
from dispatch.http.resolver import DispatchResolver, entrypoint
from dispatch.jobs.models import JobStatus
from dispatch.ops import queries
from dispatch.ops.models import MAX_BOX_DEGREES, Box, EventPage, OpsJobs, OpsWorkers, Summary

app = DispatchResolver()
OPS = {Role.OPS}
BBOX = Query(
    description=f"minLng,minLat,maxLng,maxLat; at most {MAX_BOX_DEGREES:g} degrees each way",
    max_length=200,
)


def box_of(bbox: str) -> Box:
    try:
        return Box.parse(bbox)
    except ValueError as error:
        raise DispatchError(
            Code.VALIDATION_FAILED, [{"field": "query.bbox", "problem": str(error)}]
        ) from None


def statuses_of(status: str | None) -> list[JobStatus]:
    if status is None:
        return queries.LIVE
    try:
        return [JobStatus(name.strip()) for name in status.split(",")]
    except ValueError:
        known = ", ".join(s.value for s in JobStatus)
        problem = f"must be one or more of {known}, separated by commas"
        raise DispatchError(
            Code.VALIDATION_FAILED, [{"field": "query.status", "problem": problem}]
        ) from None


@app.endpoint(
    "GET",
    "/ops/jobs",
    roles=OPS,
    operation_id="listOpsJobs",
    responses=answers(200, OpsJobs, *READ),
    summary="Jobs inside a box, by status",
)
def ops_jobs(
    bbox: Annotated[str, BBOX],
    status: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
) -> Response[Any]:
    box, statuses = box_of(bbox), statuses_of(status)
    return app.answer(db.run(lambda conn: queries.jobs_in(conn, box, statuses, limit)))


@app.endpoint(
    "GET",
    "/ops/workers",
    roles=OPS,
    operation_id="listOpsWorkers",
    responses=answers(200, OpsWorkers, *READ),
    summary="Fresh worker positions inside a box",
)
def ops_workers(
    bbox: Annotated[str, BBOX],
    limit: Annotated[int, Query(ge=1, le=5000)] = 5000,
) -> Response[Any]:
    box = box_of(bbox)
    return app.answer(db.run(lambda conn: queries.workers_in(conn, box, limit)))


@app.endpoint(
    "GET",
    "/ops/events",
    roles=OPS,
    operation_id="listOpsEvents",
    responses=answers(200, EventPage, *READ),
    summary="The event stream, oldest first, from a cursor",
)
def ops_events(
    after: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> Response[Any]:
    try:
        if after is not None:
            queries.position_of(after)
    except ValueError as error:
        raise DispatchError(
            Code.VALIDATION_FAILED, [{"field": "query.after", "problem": str(error)}]
        ) from None
    return app.answer(db.run(lambda conn: queries.events_after(conn, after, limit)))


@app.endpoint(
    "GET",
    "/ops/summary",
    roles=OPS,
    operation_id="getOpsSummary",
    responses=answers(200, Summary, *SIGNED_IN),
    summary="The marketplace now and over the last hour",
)
def ops_summary() -> Response[Any]:
    return app.answer(db.run(queries.summary))


lambda_handler = entrypoint(app)
