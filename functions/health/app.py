"""GET /health: 200 when the database answers, 503 otherwise. No token needed."""

from dispatch import db
from dispatch.db import Query
from dispatch.errors import Code
from dispatch.http.openapi import Health, answers
from dispatch.http.resolver import DispatchResolver, entrypoint

app = DispatchResolver()

# Whether the database answers: one round trip, nothing read.
PING: Query[None, None] = Query("SELECT 1")


@app.endpoint(
    "GET",
    "/health",
    roles=None,
    operation_id="getHealth",
    responses=answers(200, Health, Code.UNAVAILABLE),
    summary="Whether the API and its database answer",
)
def health() -> Health:
    # A dead database raises OperationalError, which the resolver answers with 503 UNAVAILABLE.
    db.run(lambda conn: PING.run(conn, None))
    return Health(status="ok")


lambda_handler = entrypoint(app)
