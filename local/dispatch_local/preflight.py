"""`dispatch preflight`: what a deploy needs from the account that the template cannot check
(docs/deploy.md, step 0), read with the deploying credentials before `sam deploy`.

- The VPC resolves DNS and gives hostnames (enableDnsSupport, enableDnsHostnames): the
  interface endpoints the template makes use private DNS, which needs both; without them
  the functions' calls to SQS, EventBridge and Secrets Manager go to the public names, which
  a VPC without a NAT cannot reach, and the deploy fails or hangs at the migrations.
- The account's API Gateway CloudWatch role: none is fine (the stack sets its own), a role
  that is set is the account's and stays (reported, so nobody is surprised).
- The Aurora PostgreSQL engine version is offered in the region.
"""

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from dispatch import aws


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    fix: str = ""  # the command that fixes it, when not ok

    def __str__(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.what}" + (f"\n     fix: {self.fix}" if self.fix else "")


DNS_ATTRIBUTES = {
    "enableDnsSupport": "--enable-dns-support",
    "enableDnsHostnames": "--enable-dns-hostnames",
}


def vpc_dns(ec2: Any, vpc_id: str) -> list[Finding]:
    found = []
    for attribute, option in DNS_ATTRIBUTES.items():
        answer = ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=attribute)
        key = attribute[0].upper() + attribute[1:]
        if answer[key]["Value"]:
            found.append(Finding(True, f"VPC {vpc_id}: {attribute} is on"))
        else:
            found.append(
                Finding(
                    False,
                    f"VPC {vpc_id}: {attribute} is off; the private-DNS endpoints need it",
                    f"aws ec2 modify-vpc-attribute --vpc-id {vpc_id} {option} '{{\"Value\":true}}'",
                )
            )
    return found


def cloudwatch_role(apigateway: Any) -> Finding:
    role = apigateway.get_account().get("cloudwatchRoleArn")
    if role:
        return Finding(True, f"API Gateway's CloudWatch role is the account's own, kept: {role}")
    return Finding(True, "API Gateway has no CloudWatch role: the stack sets its own")


def engine_version(rds: Any, version: str) -> Finding:
    try:
        offered = rds.describe_db_engine_versions(Engine="aurora-postgresql", EngineVersion=version)
    except (ClientError, BotoCoreError, ResponseParserError) as error:  # unknown, not refused
        reason = str(error).splitlines()[0]
        return Finding(True, f"Aurora PostgreSQL {version}: could not check ({reason})")
    if offered.get("DBEngineVersions"):
        return Finding(True, f"Aurora PostgreSQL {version} is offered in the region")
    return Finding(
        False,
        f"Aurora PostgreSQL {version} is not offered in the region",
        "aws rds describe-db-engine-versions --engine aurora-postgresql --query "
        "'DBEngineVersions[].EngineVersion', then deploy with DatabaseEngineVersion=<one>",
    )


def run(vpc_id: str | None, version: str | None = None) -> list[Finding]:
    if version is None:
        from dispatch_local.template import load_template

        version = str(load_template()["Parameters"]["DatabaseEngineVersion"]["Default"])
    found = []
    if vpc_id:
        found += vpc_dns(aws.connect("ec2"), vpc_id)
    found.append(cloudwatch_role(aws.connect("apigateway")))
    found.append(engine_version(aws.connect("rds"), version))
    return found
