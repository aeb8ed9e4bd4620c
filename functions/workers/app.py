"""PUT /workers/me: a worker sets the skills on their profile."""

from typing import Any

from aws_lambda_powertools.event_handler import Response

from dispatch import workers
from dispatch.auth import Role
from dispatch.http import DispatchResolver, entrypoint
from dispatch.openapi import answers

app = DispatchResolver()


@app.endpoint(
    "PUT", "/workers/me", roles={Role.WORKER}, responses=answers(200, workers.WorkerProfile)
)
def put_worker_profile(update: workers.WorkerProfileUpdate) -> Response[Any]:
    worker = app.caller
    return app.idempotent(lambda conn: workers.set_skills(conn, worker.id, update))


lambda_handler = entrypoint(app)
