"""The business chooses: workers apply for a business_choice job (and may withdraw), the
business lists its applicants and assigns one (exactly one assign wins)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from dispatch import db
from dispatch.auth import Role
from dispatch.choice import commands
from dispatch.choice.models import Applicants, Application, ApplyForJob, AssignJob
from dispatch.errors import Code
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, READ, answers
from dispatch.http.resolver import entrypoint
from dispatch.jobs.models import Job
from dispatch.models import ApiId
from dispatch.outbox import relay

app = KeyedResolver()
NO_NOTE = ApplyForJob()  # an empty body means {}


@app.endpoint(
    "POST",
    "/jobs/<job_id>/applications",
    roles={Role.WORKER},
    operation_id="applyForJob",
    location="/jobs/{job_id}/applications/me",
    responses=answers(
        201,
        Application,
        *KEYED_WRITE,
        Code.NOT_FOUND,
        Code.SKILLS_MISSING,
        Code.RATING_TOO_LOW,
        Code.JOB_IS_FIRST_COME,
        Code.JOB_TAKEN,
        Code.JOB_UNAVAILABLE,
        Code.BLOCKED_BY_BUSINESS,
    ),
    summary="Apply for a job the business chooses for (idempotent per worker and job)",
)
def apply(job_id: ApiId, request: Annotated[ApplyForJob, Body()] = NO_NOTE) -> Response[Any]:
    worker = app.caller
    return app.answered(
        lambda conn, key: commands.apply(conn, job_id, worker.id, request.note, key),
        status=201,
    )


@app.endpoint(
    "DELETE",
    "/jobs/<job_id>/applications/me",
    roles={Role.WORKER},
    operation_id="withdrawApplication",
    stores_answers=False,  # withdrawing twice leaves the same state: nothing to replay
    responses=answers(
        204,
        None,
        Code.VALIDATION_FAILED,
        Code.IDEMPOTENCY_KEY_REQUIRED,
        Code.PAYLOAD_TOO_LARGE,
        *(c for c in READ if c is not Code.VALIDATION_FAILED),
        Code.NOT_FOUND,
        Code.ILLEGAL_TRANSITION,
    ),
    summary="Withdraw my application",
)
def withdraw(job_id: ApiId) -> Response[Any]:
    worker = app.caller
    db.run(lambda conn: commands.withdraw(conn, job_id, worker.id))
    relay.after_commit(db.connection(), job_id)  # its application.withdrawn, now
    return Response(204)


@app.endpoint(
    "GET",
    "/jobs/<job_id>/applications",
    roles={Role.BUSINESS, Role.OPS},
    operation_id="listApplicants",
    responses=answers(200, Applicants, *READ, Code.NOT_FOUND),
    summary="A job's applicants, with what the business needs to choose",
)
def applicants(job_id: ApiId) -> Response[Any]:
    caller = app.caller
    return app.answer(db.run(lambda conn: commands.applicants(conn, caller, job_id)))


@app.endpoint(
    "POST",
    "/jobs/<job_id>/assign",
    roles={Role.BUSINESS},
    operation_id="assignJob",
    responses=answers(
        200,
        Job,
        *KEYED_WRITE,
        Code.NOT_FOUND,
        Code.APPLICANT_NOT_QUALIFIED,
        Code.JOB_IS_FIRST_COME,
        Code.JOB_ALREADY_ASSIGNED,
        Code.JOB_UNAVAILABLE,
        Code.VERSION_CONFLICT,
        Code.NOT_AN_APPLICANT,
        Code.APPLICANT_BUSY,
        Code.APPLICANT_BLOCKED,
    ),
    summary="Assign one applicant (exactly one assign wins)",
)
def assign(job_id: ApiId, choice: AssignJob) -> Response[Any]:
    business = app.caller
    return app.answered(
        lambda conn, key: commands.assign(
            conn, job_id, business.id, choice.worker_id, choice.version, key=key
        )
    )


lambda_handler = entrypoint(app)
