"""What the deploy-time custom resources do (functions/apigateway_account, prune_versions).

API Gateway's CloudWatch role is one setting per account and region, shared by every API
there: a WebSocket stage that logs access needs it set, and API Gateway cannot unset it once
set (only point it at another role). So the stack sets its own role only where none is set,
never replaces another's, and on delete hands the setting over to another stage's role of
this project when the account names its own (docs/deploy.md, "The account's API Gateway
CloudWatch role").

Lambda keeps every version SAM publishes, each with its SnapStart snapshot; the pruner
deletes the versions no alias points to but the newest few (docs/deploy.md, "Old versions").
"""

import time
from typing import Any

from botocore.exceptions import ClientError

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
    if current == role_arn:  # set by this stack's earlier deploy
        return current
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


def function_of(version_arn: str) -> str:
    """arn:aws:lambda:<region>:<account>:function:<name>:<version> -> the function's ARN."""
    return version_arn.rsplit(":", 1)[0]


def prune_versions(lambda_: Any, function: str, rollback: int, keep: set[str]) -> list[str]:
    """Delete the function's published versions that no alias points to and that are not in
    `keep`, but the `rollback` newest of them. Returns the deleted version numbers."""
    name = function.rsplit(":", 1)[1]  # the API takes names and ARNs; moto's, names only
    try:
        aliased = {
            alias["FunctionVersion"]
            for page in lambda_.get_paginator("list_aliases").paginate(FunctionName=name)
            for alias in page["Aliases"]
        }
    except lambda_.exceptions.ResourceNotFoundException:  # gone: nothing of it to prune
        logger.warning("no such function", extra={"function": function})
        return []
    published = sorted(
        (
            (int(v["Version"]), str(v["FunctionArn"]))
            for page in lambda_.get_paginator("list_versions_by_function").paginate(
                FunctionName=name
            )
            for v in page["Versions"]
            if v["Version"] != "$LATEST"
        ),
        reverse=True,
    )
    spare = [(n, arn) for n, arn in published if str(n) not in aliased | keep]
    deleted = []
    for number, arn in spare[rollback:]:
        # By the version's own ARN: the role may delete versions (function:<name>:*) and
        # never the function itself. A version that cannot go is left for the next deploy:
        # tidying must never roll a deploy back.
        try:
            lambda_.delete_function(FunctionName=arn)
        except ClientError as error:
            logger.warning("version not pruned", extra={"version": arn, "error": str(error)})
            continue
        deleted.append(str(number))
    logger.info(
        "versions pruned",
        extra={"function": function, "deleted": deleted, "aliased": sorted(aliased)},
    )
    return deleted


def prune_all(lambda_: Any, versions: list[str], previous: list[str], rollback: int) -> int:
    """Prune every function named by its current version's ARN. The versions this deploy and
    the one before named are kept whatever the aliases say, so a rollback of this deploy
    finds the version it goes back to. Returns how many versions were deleted."""
    keep: dict[str, set[str]] = {}
    for arn in [*versions, *previous]:
        keep.setdefault(function_of(arn), set()).add(arn.rsplit(":", 1)[1])
    deleted = 0
    for function in sorted({function_of(arn) for arn in versions}):
        try:
            deleted += len(prune_versions(lambda_, function, rollback, keep[function]))
        except ClientError as error:  # no right to list it, throttled: next deploy's work
            logger.warning("function not pruned", extra={"function": function, "error": str(error)})
    return deleted
