"""PUT /workers/me (skills, in Postgres) and PUT /workers/me/location (Redis GEO only)."""

from typing import Any

from aws_lambda_powertools.event_handler import Response

from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, answers
from dispatch.http.resolver import entrypoint
from dispatch.workers import locations, profiles
from dispatch.workers.models import WorkerPosition, WorkerProfile, WorkerProfileUpdate

app = KeyedResolver()


@app.endpoint(
    "PUT",
    "/workers/me",
    roles={Role.WORKER},
    operation_id="putMyProfile",
    responses=answers(200, WorkerProfile, *KEYED_WRITE),
    summary="Set my skills (creates my profile)",
)
def put_worker_profile(update: WorkerProfileUpdate) -> Response[Any]:
    worker = app.caller
    return app.answered(lambda conn, key: profiles.set_skills(conn, worker.id, update, key))


@app.endpoint(
    "PUT",
    "/workers/me/location",
    roles={Role.WORKER},
    operation_id="putMyLocation",
    stores_answers=False,
    # Not stored under its key (latest wins): no replay, reuse or in-progress answers.
    responses=answers(
        204,
        None,
        Code.VALIDATION_FAILED,
        Code.IDEMPOTENCY_KEY_REQUIRED,
        Code.PAYLOAD_TOO_LARGE,
        Code.UNAUTHORIZED,
        Code.FORBIDDEN,
        Code.UNAVAILABLE,
    ),
    summary="Report where I am",
)
def put_worker_location(where: WorkerPosition) -> Response[Any]:
    # Latest wins, so a retry is harmless: the Idempotency-Key is required (the contract) but
    # not stored, which keeps 3k location writes a second away from Postgres.
    locations.report(app.caller.id, where)
    return Response(204)


lambda_handler = entrypoint(app)
