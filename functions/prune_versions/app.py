"""Old versions, at deploy: a CloudFormation custom resource (VersionPruning) that deletes
each aliased function's published versions no alias points to, but the newest few and the
previous deploy's (a rollback's target); each holds a SnapStart snapshot (dispatch.deployment).
It runs whenever a deploy publishes a version: its Versions property names them all."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import aws, deployment
from dispatch.config import settings
from dispatch.custom_resource import answer
from dispatch.observability import logger

settings()  # at cold start: a bad environment fails the init, not the first event


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    def work() -> dict[str, str]:  # inside: even a malformed event is answered FAILED
        if event["RequestType"] == "Delete":  # the versions go with their functions
            return {"Deleted": "0"}
        properties = event["ResourceProperties"]
        previous = (event.get("OldResourceProperties") or {}).get("Versions", [])
        deleted = deployment.prune_all(
            aws.client("lambda"),
            [str(v) for v in properties["Versions"]],
            [str(v) for v in previous],
            rollback=int(properties.get("RollbackVersions", 1)),
        )
        return {"Deleted": str(deleted)}

    return answer(event, context, work, "dispatch-version-pruning")
