"""POST /jobs: a business posts a job."""

from typing import Any

from aws_lambda_powertools.event_handler import Response

from dispatch.auth import Role
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, answers
from dispatch.http.resolver import entrypoint
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.jobs.requests import CreateJob

app = KeyedResolver()


@app.endpoint(
    "POST",
    "/jobs",
    roles={Role.BUSINESS},
    operation_id="createJob",
    location="/jobs/{id}",
    responses=answers(201, Job, *KEYED_WRITE),
    summary="Post a job",
)
def create_job(job: CreateJob) -> Response[Any]:
    business = app.caller
    return app.answered(
        lambda conn, key: commands.create_job(conn, business.id, job, key), status=201
    )


lambda_handler = entrypoint(app)
