"""PUT /workers/me (skills, in Postgres) and PUT /workers/me/location (Redis GEO only)."""

from typing import Any

from aws_lambda_powertools.event_handler import Response

from dispatch import locations, workers
from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http import DispatchResolver, entrypoint
from dispatch.openapi import KEYED_WRITE, answers

app = DispatchResolver()


@app.endpoint(
    "PUT",
    "/workers/me",
    roles={Role.WORKER},
    responses=answers(200, workers.WorkerProfile, *KEYED_WRITE),
)
def put_worker_profile(update: workers.WorkerProfileUpdate) -> Response[Any]:
    worker = app.caller
    return app.idempotent(lambda conn: workers.set_skills(conn, worker.id, update))


@app.endpoint(
    "PUT",
    "/workers/me/location",
    roles={Role.WORKER},
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
)
def put_worker_location(where: locations.WorkerPosition) -> Response[Any]:
    # Latest wins, so a retry is harmless: the Idempotency-Key is required (the contract) but
    # not stored, which keeps 3k location writes a second away from Postgres.
    locations.report(app.caller.id, where)
    return Response(204)


lambda_handler = entrypoint(app)
