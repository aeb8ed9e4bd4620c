"""Migrations at deploy: a CloudFormation custom resource that applies pending migrations.

Runs on every deploy that changes this function (migrations ship inside it), is idempotent,
and is safe when two run at once (dispatch.migrations serialises migrators). It always
answers CloudFormation, so a failed migration fails the deploy instead of hanging it.
"""

import json
import urllib.request
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db, migrations
from dispatch.config import settings
from dispatch.observability import logger

MIGRATIONS = Path(__file__).parent / "migrations"

settings()  # at cold start: a bad environment fails the init, not the first event


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    status, reason, applied = "SUCCESS", "", []
    try:
        if event["RequestType"] in ("Create", "Update"):
            with db.connect() as conn:
                applied = migrations.apply(conn, migrations.load(MIGRATIONS))
            logger.info("migrations applied", extra={"applied": applied})
    except Exception as error:  # report it: CloudFormation waits for an answer otherwise
        logger.exception("migration failed")
        status, reason = "FAILED", f"{type(error).__name__}: {error}"[:500]
    answer = {
        "Status": status,
        "Reason": reason or f"see {context.log_group_name}",
        "PhysicalResourceId": "dispatch-migrations",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": {"Applied": ",".join(applied)},
    }
    body = json.dumps(answer).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""}
    )
    with urllib.request.urlopen(request, timeout=10):
        pass
    return answer
