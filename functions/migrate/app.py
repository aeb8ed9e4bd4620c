"""Migrations at deploy: a CloudFormation custom resource that applies pending migrations.

Runs on every deploy that changes this function (migrations ship inside it), is idempotent,
and is safe when two run at once (dispatch.migrations serialises migrators). Migrations run
with their own timeouts (a short lock wait, retried; a long statement), and CloudFormation is
always answered before this function's own deadline: the database cuts the work off well
before it (the statement timeout, the transaction's own setting), and a timer answers FAILED
and hangs up if it still runs, so a slow migration fails the deploy in minutes instead of
leaving CloudFormation waiting an hour. Not a cancel request: RDS Proxy does not pass them on
(a cancel through it does nothing), so the server-side timeout is what stops the statement;
hanging up only frees this function, and the transaction, never committed, rolls back.
"""

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db, migrations
from dispatch.config import settings
from dispatch.custom_resource import answer
from dispatch.observability import logger

MIGRATIONS = Path(__file__).parent / "migrations"
WORK_MARGIN_SECONDS = 30.0  # the database work stops this long before the deadline
ANSWER_MARGIN_SECONDS = 10.0  # the timer answers FAILED this long before it

settings()  # at cold start: a bad environment fails the init, not the first event


def hang_up(conn: db.Connection) -> None:
    """End the connection under the thread that waits on it (which then gets an error at
    once): shut the socket down. Closing the connection from this thread would free libpq's
    state under the other one."""
    with contextlib.suppress(OSError, ValueError):
        duplicate = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        finally:
            duplicate.close()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    left = context.get_remaining_time_in_millis() / 1000
    working: list[db.Connection] = []

    def migrate() -> dict[str, str]:
        applied: list[str] = []
        if event["RequestType"] in ("Create", "Update"):
            applied = migrations.apply_patiently(
                db.connect,
                migrations.load(MIGRATIONS),
                deadline=time.monotonic() + left - WORK_MARGIN_SECONDS,
                connected=working.append,
            )
            logger.info("migrations applied", extra={"applied": applied})
        return {"Applied": ",".join(applied)}

    def stop() -> None:
        for conn in working:
            hang_up(conn)  # the transaction never commits: nothing is half applied

    return answer(
        event,
        context,
        migrate,
        "dispatch-migrations",
        on_deadline=stop,
        margin=ANSWER_MARGIN_SECONDS,
    )
