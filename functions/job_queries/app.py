"""GET /jobs/{job_id} and GET /jobs/{job_id}/events: for the owner, the assignee and ops."""

from uuid import UUID

from dispatch import db
from dispatch.auth import Role
from dispatch.http import DispatchResolver, entrypoint
from dispatch.jobs import queries
from dispatch.jobs.models import Job, JobEvents
from dispatch.openapi import answers

app = DispatchResolver()
READERS = {Role.BUSINESS, Role.WORKER, Role.OPS}


@app.endpoint("GET", "/jobs/<job_id>", roles=READERS, responses=answers(200, Job))
def get_job(job_id: UUID) -> Job:
    return db.run(lambda conn: queries.visible_job(conn, app.caller, job_id))


@app.endpoint("GET", "/jobs/<job_id>/events", roles=READERS, responses=answers(200, JobEvents))
def get_job_events(job_id: UUID) -> JobEvents:
    return db.run(lambda conn: queries.job_events(conn, app.caller, job_id))


lambda_handler = entrypoint(app)
