"""The account's API Gateway CloudWatch role, at deploy: a CloudFormation custom resource
(ApiGatewayAccount) that sets the stack's role where the account has none, so that the
WebSocket stage's access logs do not roll a fresh account's first deploy back, and never
replaces an account's own (dispatch.deployment)."""

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
        role = str(event["ResourceProperties"]["RoleArn"])
        apigateway = aws.client("apigateway")
        if event["RequestType"] == "Delete":
            in_use = deployment.release_account_role(apigateway, aws.client("iam"), role)
        else:
            previous = str((event.get("OldResourceProperties") or {}).get("RoleArn", ""))
            patience = deployment.ROLE_PROPAGATION_SECONDS
            in_use = deployment.claim_account_role(apigateway, role, previous, patience)
        return {"RoleArn": in_use, "OwnRole": str(in_use == role).lower()}

    return answer(event, context, work, "dispatch-apigateway-account")
