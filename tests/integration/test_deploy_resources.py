"""Issue 34, points 1 and 10: the deploy-time custom resources (the account's API Gateway
CloudWatch role, old versions) through their handlers, and `dispatch preflight`, on moto's
API Gateway, IAM, Lambda and EC2. Each test runs in an account of its own on the stand-in
(moto's x-moto-account-id), so the account-wide setting starts empty.

moto lacks RDS's DescribeDBEngineVersions: preflight's engine check reports that it could
not check, which is what a test here holds; the rest is checked on what moto has."""

import io
import json
import random
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from dispatch import aws, deployment
from dispatch.deployment import ROLE_PATH
from dispatch_local import REPO_ROOT, cli
from dispatch_local.events import LambdaContext
from dispatch_local.template import Function, handler_of
from tests.integration.test_migrate_function import cloudformation

__all__ = ["cloudformation"]  # the stand-in for CloudFormation's answer address, reused

ACCOUNT_FUNCTION = Function(
    "ApiGatewayAccountFunction",
    (REPO_ROOT / "functions" / "apigateway_account").resolve(),
    "app.lambda_handler",
)
PRUNE_FUNCTION = Function(
    "PruneVersionsFunction",
    (REPO_ROOT / "functions" / "prune_versions").resolve(),
    "app.lambda_handler",
)
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "apigateway.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)
# moto loads no AWS-managed policies: one of the account's own stands for
# AmazonAPIGatewayPushToCloudWatchLogs (the stack's role's), so a delete has one to detach.
PUSH_TO_LOGS = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "*"}],
    }
)


@pytest.fixture
def account() -> Iterator[str]:
    """A fresh account on the stand-in, for the handlers' clients and this test's own."""
    number = str(random.randrange(10**11, 10**12))

    def in_account(request: Any, **_: Any) -> None:
        request.headers["x-moto-account-id"] = number

    clients = [aws.client(s) for s in ("apigateway", "iam", "lambda")]
    for client in clients:
        client.meta.events.register("before-send.*", in_account, unique_id="test-account")
    yield number
    for client in clients:
        client.meta.events.unregister("before-send.*", unique_id="test-account")


def make_role(name: str, path: str = ROLE_PATH) -> str:
    iam = aws.client("iam")
    arn = str(
        iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    )
    policy = iam.create_policy(PolicyName=f"{name}-logs", PolicyDocument=PUSH_TO_LOGS)
    iam.attach_role_policy(RoleName=name, PolicyArn=policy["Policy"]["Arn"])
    return arn


def role_exists(arn: str) -> bool:
    iam = aws.client("iam")
    try:
        iam.get_role(RoleName=arn.rsplit("/", 1)[1])
    except iam.exceptions.NoSuchEntityException:
        return False
    return True


def account_role() -> str | None:
    role: str | None = aws.client("apigateway").get_account().get("cloudwatchRoleArn")
    return role


def event(
    kind: str, url: str, logical_id: str, properties: dict[str, Any], **more: Any
) -> dict[str, Any]:
    return {
        "RequestType": kind,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/dispatch-dev/1",
        "RequestId": f"req-{kind}",
        "LogicalResourceId": logical_id,
        "ResourceType": f"Custom::{logical_id}",
        "ResourceProperties": properties,
        **more,
    }


def run(function: Function, request: dict[str, Any]) -> dict[str, Any]:
    context = LambdaContext(function_name=function.function, timeout_seconds=120)
    result: dict[str, Any] = handler_of(function)(request, context)
    return result


Answers = tuple[str, list[dict[str, Any]]]


# -- point 1: the account's API Gateway CloudWatch role ----------------------------------------


def test_a_fresh_account_gets_the_stacks_role(account: str, cloudformation: Answers) -> None:
    url, answers = cloudformation
    assert not account_role()  # a new account: the WebSocket stage's access logs would fail
    mine = make_role("dispatch-dev-cloudwatch")
    run(ACCOUNT_FUNCTION, event("Create", url, "ApiGatewayAccount", {"RoleArn": mine}))
    assert account_role() == mine
    assert answers[-1]["Status"] == "SUCCESS"
    assert answers[-1]["Data"] == {"RoleArn": mine, "OwnRole": "true"}
    # A later deploy (an update) keeps it; the stack's delete with no other stage leaves it
    # named (API Gateway cannot unset it), and so the role stays too.
    run(ACCOUNT_FUNCTION, event("Update", url, "ApiGatewayAccount", {"RoleArn": mine},
                                OldResourceProperties={"RoleArn": mine}))  # fmt: skip
    run(ACCOUNT_FUNCTION, event("Delete", url, "ApiGatewayAccount", {"RoleArn": mine}))
    assert account_role() == mine and role_exists(mine)
    assert [a["Status"] for a in answers] == ["SUCCESS"] * 3


def test_an_account_with_a_role_keeps_its_own(account: str, cloudformation: Answers) -> None:
    url, answers = cloudformation
    theirs = make_role("apigateway-logs", path="/")
    aws.client("apigateway").update_account(
        patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": theirs}]
    )
    mine = make_role("dispatch-dev-cloudwatch")
    run(ACCOUNT_FUNCTION, event("Create", url, "ApiGatewayAccount", {"RoleArn": mine}))
    assert account_role() == theirs
    assert answers[-1]["Data"] == {"RoleArn": theirs, "OwnRole": "false"}
    # Delete: their role stays named and stays; the stack's unused role goes.
    run(ACCOUNT_FUNCTION, event("Delete", url, "ApiGatewayAccount", {"RoleArn": mine}))
    assert account_role() == theirs and role_exists(theirs)
    assert not role_exists(mine)
    assert [a["Status"] for a in answers] == ["SUCCESS", "SUCCESS"]


def test_delete_hands_the_setting_over_to_another_stage(
    account: str, cloudformation: Answers
) -> None:
    """dev set its role; prod, deployed next, kept dev's. Deleting dev must not leave the
    account naming a deleted role (every API's logs there would stop): prod's takes over."""
    url, answers = cloudformation
    dev, prod = make_role("dispatch-dev-cloudwatch"), make_role("dispatch-prod-cloudwatch")
    run(ACCOUNT_FUNCTION, event("Create", url, "ApiGatewayAccount", {"RoleArn": dev}))
    run(ACCOUNT_FUNCTION, event("Create", url, "ApiGatewayAccount", {"RoleArn": prod}))
    assert account_role() == dev
    run(ACCOUNT_FUNCTION, event("Delete", url, "ApiGatewayAccount", {"RoleArn": dev}))
    assert account_role() == prod and role_exists(prod)
    assert not role_exists(dev)
    assert answers[-1]["Data"] == {"RoleArn": prod, "OwnRole": "false"}


def test_a_failure_is_answered_failed_not_hung(account: str, cloudformation: Answers) -> None:
    url, answers = cloudformation
    result = run(ACCOUNT_FUNCTION, event("Create", url, "ApiGatewayAccount", {}))
    assert result["Status"] == "FAILED" and answers[-1]["Status"] == "FAILED"
    assert "KeyError" in answers[-1]["Reason"] and "RoleArn" in answers[-1]["Reason"]
    assert not account_role()


# -- point 10: old versions --------------------------------------------------------------------


def deploy_versions(name: str, count: int) -> str:
    """A function with `count` published versions, as that many deploys leave it."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("app.py", "def lambda_handler(event, context):\n    return {}\n")
    lambda_ = aws.client("lambda")
    role = make_role(f"{name}-role", path="/")
    arn = str(
        lambda_.create_function(
            FunctionName=name, Runtime="python3.12", Role=role, Handler="app.lambda_handler",
            Code={"ZipFile": archive.getvalue()},
        )["FunctionArn"]
    )  # fmt: skip
    for deploy in range(1, count + 1):
        lambda_.update_function_configuration(FunctionName=name, Description=f"deploy {deploy}")
        lambda_.publish_version(FunctionName=name)
    return arn


def versions_of(name: str) -> list[str]:
    found = aws.client("lambda").list_versions_by_function(FunctionName=name)["Versions"]
    return sorted((v["Version"] for v in found if v["Version"] != "$LATEST"), key=int)


def test_pruning_keeps_the_aliased_the_rollback_and_the_newest(
    account: str, cloudformation: Answers
) -> None:
    """Six deploys: live moved from 5 to 6 in this one, and someone's canary alias is on 2.
    Kept: 6 and 2 (aliased), 5 (the previous deploy's, a rollback's target) and 4 (the newest
    other, RollbackVersions = 1). Deleted: 1 and 3. A second function with one version only
    loses nothing, and the next run deletes nothing more."""
    url, answers = cloudformation
    accept, create = deploy_versions("accept", 6), deploy_versions("create", 1)
    lambda_ = aws.client("lambda")
    lambda_.create_alias(FunctionName="accept", Name="live", FunctionVersion="6")
    lambda_.create_alias(FunctionName="accept", Name="canary", FunctionVersion="2")
    lambda_.create_alias(FunctionName="create", Name="live", FunctionVersion="1")
    now = {"RollbackVersions": "1", "Versions": [f"{accept}:6", f"{create}:1"]}
    before = {"RollbackVersions": "1", "Versions": [f"{accept}:5", f"{create}:1"]}
    request = event("Update", url, "VersionPruning", now, OldResourceProperties=before)
    run(PRUNE_FUNCTION, request)
    assert versions_of("accept") == ["2", "4", "5", "6"]
    assert versions_of("create") == ["1"]
    assert answers[-1]["Status"] == "SUCCESS" and answers[-1]["Data"] == {"Deleted": "2"}
    run(PRUNE_FUNCTION, request)
    assert versions_of("accept") == ["2", "4", "5", "6"]
    assert answers[-1]["Data"] == {"Deleted": "0"}


def test_pruning_a_failure_is_answered_failed(account: str, cloudformation: Answers) -> None:
    url, answers = cloudformation
    run(PRUNE_FUNCTION, event("Update", url, "VersionPruning", {"RollbackVersions": "1"}))
    assert answers[-1]["Status"] == "FAILED" and "Versions" in answers[-1]["Reason"]


class RefusingDeletes:
    """Lambda's API as moto serves it, but a version whose delete IAM refuses."""

    def __init__(self, client: Any, refused: str) -> None:
        self.client, self.refused = client, refused

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def delete_function(self, FunctionName: str) -> Any:
        if FunctionName == self.refused:
            raise ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}},
                "DeleteFunction",
            )
        return self.client.delete_function(FunctionName=FunctionName)


def test_a_version_that_cannot_go_is_left_and_the_deploy_goes_on(account: str) -> None:
    accept = deploy_versions("accept", 4)
    lambda_ = aws.client("lambda")
    lambda_.create_alias(FunctionName="accept", Name="live", FunctionVersion="4")
    refusing = RefusingDeletes(lambda_, f"{accept}:1")
    deleted = deployment.prune_all(refusing, [f"{accept}:4"], [f"{accept}:3"], rollback=0)
    assert (deleted, versions_of("accept")) == (1, ["1", "3", "4"])


# -- point 1: dispatch preflight ---------------------------------------------------------------


def test_preflight_flags_a_vpc_without_dns_hostnames_and_says_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ec2 = aws.connect("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]  # hostnames off, as in AWS
    with pytest.raises(SystemExit) as refused:
        cli.main(["preflight", "--vpc-id", vpc])
    assert "fix the FAIL lines" in str(refused.value.code)
    out = capsys.readouterr().out
    assert f"ok   VPC {vpc}: enableDnsSupport is on" in out
    assert f"FAIL VPC {vpc}: enableDnsHostnames is off" in out
    fix = f"aws ec2 modify-vpc-attribute --vpc-id {vpc} --enable-dns-hostnames '{{\"Value\":true}}'"
    assert fix in out
    assert "API Gateway" in out and "CloudWatch role" in out
    assert "Aurora PostgreSQL 17.7: could not check" in out  # moto has no DescribeDBEngineVersions
    ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
    cli.main(["preflight", "--vpc-id", vpc])
    out = capsys.readouterr().out
    assert "FAIL" not in out and f"ok   VPC {vpc}: enableDnsHostnames is on" in out
