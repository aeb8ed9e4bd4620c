"""POST /jobs/{job_id}/accept: a worker claims a job; exactly one of many wins."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, answers
from dispatch.http.resolver import entrypoint
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.jobs.requests import AcceptJob
from dispatch.models import ApiId
from dispatch.observability import count

app = KeyedResolver()
ACCEPT_ANSWERS = answers(
    200,
    Job,
    *KEYED_WRITE,
    Code.NOT_FOUND,
    Code.SKILLS_MISSING,
    Code.RATING_TOO_LOW,
    Code.JOB_TAKEN,
    Code.JOB_UNAVAILABLE,
    Code.VERSION_CONFLICT,
    Code.WORKER_BUSY,
    Code.BUSINESS_CHOOSES,
    Code.BLOCKED_BY_BUSINESS,
)
NO_VERSION = AcceptJob()  # an empty body means {}


@app.endpoint(
    "POST",
    "/jobs/<job_id>/accept",
    roles={Role.WORKER},
    operation_id="acceptJob",
    responses=ACCEPT_ANSWERS,
    summary="Accept a job (exactly one worker wins)",
)
def accept_job(job_id: ApiId, claim: Annotated[AcceptJob, Body()] = NO_VERSION) -> Response[Any]:
    worker, version = app.caller, claim.version
    answer = app.answered(
        lambda conn, key: commands.accept_job(conn, job_id, worker.id, version, key)
    )
    if not answer.headers.get("Idempotent-Replayed"):
        count("AcceptsWon" if answer.status_code == 200 else "AcceptsLost")
    return answer


lambda_handler = entrypoint(app)
