"""What the deploy-time custom resources do (functions/apigateway_account).

API Gateway's CloudWatch role is one setting per account and region, shared by every API
there: a WebSocket stage that logs access needs it set, and API Gateway cannot unset it once
set (only point it at another role). So the stack sets its own role only where none is set,
never replaces another's, and on delete hands the setting over to another stage's role of
this project when the account names its own (docs/deploy.md, "The account's API Gateway
CloudWatch role").
"""

import time
from typing import Any

from dispatch.observability import logger

# Every stack's role for API Gateway's logs lives under this IAM path, so that a stack being
# deleted can find another stage's role to hand the account's setting over to.
ROLE_PATH = "/dispatch-apigateway/"
# A role made a moment ago is not yet usable by API Gateway ("The role ARN does not have
# required permissions"): IAM is eventually consistent. Tried again for about this long.
ROLE_PROPAGATION_SECONDS = 90.0


def account_role(apigateway: Any) -> str:
    """The role the account and region's API Gateway logs with, "" when none."""
    return str(apigateway.get_account().get("cloudwatchRoleArn") or "")


def set_account_role(apigateway: Any, role_arn: str, patience: float = 0.0) -> None:
    operation = {"op": "replace", "path": "/cloudwatchRoleArn", "value": role_arn}
    deadline = time.monotonic() + patience
    while True:
        try:
            apigateway.update_account(patchOperations=[operation])
            return
        except apigateway.exceptions.BadRequestException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(5)


def claim_account_role(
    apigateway: Any, role_arn: str, previous_arn: str = "", patience: float = 0.0
) -> str:
    """Set the stack's role where the account has none (or names the stack's previous role,
    replaced since); any other role is the account's own and stays. Returns the role the
    account logs with afterwards."""
    current = account_role(apigateway)
    if current and current != previous_arn:
        logger.info("the account has its own API Gateway role; kept", extra={"role": current})
        return current
    set_account_role(apigateway, role_arn, patience)
    logger.info("API Gateway's CloudWatch role set", extra={"role": role_arn})
    return role_arn


def release_account_role(apigateway: Any, iam: Any, role_arn: str) -> str:
    """At the stack's delete: another's role stays named. The stack's own is handed over to
    another stage's role (under ROLE_PATH) when there is one; else it stays named (API Gateway
    cannot unset it) and the role stays with it (the template retains it). A role of the
    stack's that the account does not name is deleted. Returns the role the account logs with
    afterwards."""
    current = account_role(apigateway)
    if current == role_arn:
        pages = iam.get_paginator("list_roles").paginate(PathPrefix=ROLE_PATH)
        others = sorted(r["Arn"] for page in pages for r in page["Roles"] if r["Arn"] != role_arn)
        if not others:
            logger.warning("the account keeps naming this stack's role", extra={"role": role_arn})
            return current
        current = others[0]
        set_account_role(apigateway, current)
        logger.info("API Gateway's CloudWatch role handed over", extra={"role": current})
    delete_role(iam, role_arn)
    return current


def delete_role(iam: Any, role_arn: str) -> None:
    name = role_arn.rsplit("/", 1)[1]
    try:
        for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=name):
            for policy in page["AttachedPolicies"]:
                iam.detach_role_policy(RoleName=name, PolicyArn=policy["PolicyArn"])
        iam.delete_role(RoleName=name)
    except iam.exceptions.NoSuchEntityException:
        pass  # gone already (a delete that ran twice)
    logger.info("the stack's API Gateway role deleted", extra={"role": role_arn})
