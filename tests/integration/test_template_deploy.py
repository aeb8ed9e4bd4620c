"""What a real account meets on a first deploy and on the next ones (issue 20), checked on the
template without an account: on what SAM generates from it (samtranslator, the transform
CloudFormation runs), and on its rules and conditions evaluated with the parameters a deploy
would give. Each test names the point of the issue it holds."""

import copy
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import certifi
import pytest
from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

from dispatch_local import REPO_ROOT
from dispatch_local.template import routes

NETWORK = {
    "VpcId": "vpc-0123456789abcdef0",
    "SubnetIds": "subnet-aaaa,subnet-bbbb",
    "RouteTableIds": "rtb-aaaa,rtb-bbbb",
}
EXISTING_DATABASE = {
    "ExistingDatabaseUrl": "postgresql://owner@db.example/dispatch",
    "ExistingDatabaseAppUrl": "postgresql://dispatch_app@db.example/dispatch",
}


@cache
def source() -> dict[str, Any]:
    """template.yaml as CloudFormation reads it (short-form tags as Fn:: functions)."""
    template: dict[str, Any] = yaml_parse((REPO_ROOT / "template.yaml").read_text())
    return template


class _NoManagedPolicies(ManagedPolicyLoader):
    """Asks IAM nothing (no account here): no AWS managed policy name is resolved."""

    def __init__(self) -> None:
        pass

    def load(self) -> dict[str, str]:
        return {}


def packaged(layer: str = "s3://artifacts/layer-1") -> dict[str, Any]:
    """The template as `sam package` leaves it: code and layer as S3 objects named by their
    content (a change of shared/ is a new layer object)."""
    template = copy.deepcopy(source())
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = f"s3://artifacts/{logical_id}-1"
        if resource["Type"] == "AWS::Serverless::LayerVersion":
            resource["Properties"]["ContentUri"] = layer
    return template


def parameters(**given: str) -> dict[str, str]:
    """What a deploy passes: each parameter's default, then what is given."""
    values = {name: str(p.get("Default", "")) for name, p in source()["Parameters"].items()}
    return {**values, **given}


def transformed(layer: str = "s3://artifacts/layer-1", **given: str) -> dict[str, Any]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    result: dict[str, Any] = transform(packaged(layer), parameters(**given), _NoManagedPolicies())
    return result


@cache
def generated() -> dict[str, Any]:
    return transformed(**NETWORK)


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


# -- a small evaluator of the intrinsic functions that conditions and rules use ----------------


class Deploy:
    """Parameters as a deploy gives them, and what CloudFormation decides from them."""

    def __init__(self, template: dict[str, Any], **given: str) -> None:
        self.template, self.values = template, parameters(**given)

    def parameter(self, name: str) -> str | list[str]:
        kind = self.template["Parameters"][name]["Type"]
        value = self.values[name]
        return value.split(",") if kind == "CommaDelimitedList" else value

    def condition(self, name: str) -> bool:
        return bool(self.value(self.template["Conditions"][name]))

    def value(self, node: Any) -> Any:
        if not isinstance(node, dict) or len(node) != 1:
            return node
        (function, argument), = node.items()  # fmt: skip
        if function == "Ref":
            if argument in self.template["Parameters"]:
                return self.parameter(argument)
            return {"Ref": argument}  # a resource: known once created
        if function == "Condition":
            return self.condition(argument)
        if function == "Fn::Equals":  # CloudFormation compares strings: 0 equals "0"
            left, right = (self.value(a) for a in argument)
            return str(left) == str(right)
        if function == "Fn::Not":
            return not self.value(argument[0])
        if function == "Fn::And":
            return all(self.value(a) for a in argument)
        if function == "Fn::Or":
            return any(self.value(a) for a in argument)
        if function == "Fn::Contains":
            within, wanted = (self.value(a) for a in argument)
            return wanted in within
        if function == "Fn::If":
            name, then, otherwise = argument
            return self.value(then if self.condition(name) else otherwise)
        return node

    def refusals(self) -> list[str]:
        """The AssertDescription of every rule assertion that fails: the deploy stops there."""
        failed = []
        for rule in self.template.get("Rules", {}).values():
            if "RuleCondition" in rule and not self.value(rule["RuleCondition"]):
                continue
            for assertion in rule["Assertions"]:
                if not self.value(assertion["Assert"]):
                    failed.append(" ".join(assertion["AssertDescription"].split()))
        return failed

    def created(self, logical_id: str) -> bool:
        condition = self.template["Resources"][logical_id].get("Condition")
        return condition is None or self.condition(condition)


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return of_type(template, "AWS::Lambda::Function")


def refs_in(node: Any) -> Iterator[str]:
    """Every logical id or parameter a node refers to (Ref, GetAtt, ${...} in Sub)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref":
                yield value
            elif key == "Fn::GetAtt":
                yield value[0] if isinstance(value, list) else value.split(".")[0]
            elif key == "Fn::Sub":
                text = value if isinstance(value, str) else value[0]
                yield from (name.split(".")[0] for name in re.findall(r"\$\{([^}!]+)\}", text))
                if not isinstance(value, str):
                    yield from refs_in(value[1])
            else:
                yield from refs_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs_in(item)


# -- 1. a new account's concurrency quota -----------------------------------------------------


def test_no_function_reserves_concurrency_by_default() -> None:
    """Lambda refuses a reservation that leaves fewer than 100 unreserved (10 in a new
    account's quota): any reservation at all would roll a first deploy back."""
    for logical_id, function in functions(generated()).items():
        reserved = function["Properties"].get("ReservedConcurrentExecutions")
        if reserved is not None:  # only the FunctionConcurrency parameter's, which is off
            assert reserved == {
                "Fn::If": [
                    "ReserveConcurrency",
                    {"Ref": "FunctionConcurrency"},
                    {"Ref": "AWS::NoValue"},
                ]
            }, logical_id
    assert not Deploy(source()).condition("ReserveConcurrency")


# -- 2. a second stage in the same account, region or VPC -------------------------------------

# The property that names each resource in the account (or region); every type the generated
# template holds is listed, so a new kind of resource has to be looked at here.
PHYSICAL_NAME = {
    "AWS::Scheduler::Schedule": "Name",
    "AWS::Events::EventBus": "Name",
    "AWS::Lambda::LayerVersion": "LayerName",
    "AWS::RDS::DBProxy": "DBProxyName",
    "AWS::ElastiCache::ServerlessCache": "ServerlessCacheName",
    "AWS::Cognito::UserPoolDomain": "Domain",
    "AWS::Logs::LogGroup": "LogGroupName",
}
UNNAMED = {  # CloudFormation names these itself, or their names are scoped to their parent
    "AWS::Lambda::Function", "AWS::Lambda::Version", "AWS::Lambda::Alias",
    "AWS::Lambda::Permission", "AWS::Lambda::EventSourceMapping", "AWS::IAM::Role",
    "AWS::IAM::ManagedPolicy", "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage",
    "AWS::Cognito::UserPool", "AWS::Cognito::UserPoolClient", "AWS::Cognito::UserPoolGroup",
    "AWS::EC2::SecurityGroup", "AWS::EC2::SecurityGroupIngress", "AWS::EC2::VPCEndpoint",
    "AWS::RDS::DBSubnetGroup", "AWS::RDS::DBCluster", "AWS::RDS::DBInstance",
    "AWS::RDS::DBProxyTargetGroup", "AWS::SecretsManager::Secret", "AWS::SQS::Queue",
    "AWS::SNS::Topic", "AWS::SNS::Subscription", "AWS::CloudWatch::Alarm", "AWS::S3::Bucket",
    "AWS::S3::BucketPolicy", "AWS::KMS::Key", "AWS::CloudFormation::WaitConditionHandle",
    "Custom::Migrations", "Custom::ApiGatewayAccount", "Custom::VersionPruning",
    # push (issue 23): the WebSocket API's parts
    "AWS::ApiGatewayV2::Authorizer", "AWS::ApiGatewayV2::Integration", "AWS::ApiGatewayV2::Route",
    # positions off the HTTP path (issue 37): the route's model (named within its API), the stream
    "AWS::ApiGatewayV2::Model", "AWS::Kinesis::Stream",
}  # fmt: skip


def names(stage: str, stack: str) -> dict[str, str]:
    """Logical id -> the name it asks for, in a stack of that name and stage."""
    template = transformed(**NETWORK, Stage=stage)
    values = {**parameters(**NETWORK, Stage=stage), "AWS::StackName": stack,
              "AWS::AccountId": "123456789012", "AWS::Region": "eu-west-1"}  # fmt: skip
    kinds = {r["Type"] for r in template["Resources"].values()}
    assert kinds <= set(PHYSICAL_NAME) | UNNAMED, kinds - set(PHYSICAL_NAME) - UNNAMED
    found = {}
    for logical_id, resource in template["Resources"].items():
        prop = PHYSICAL_NAME.get(resource["Type"])
        if prop is None:
            continue
        name = resource["Properties"].get(prop)
        if name is None:  # CloudFormation makes one up, unique to the stack
            continue
        text = name["Fn::Sub"] if isinstance(name, dict) else name
        assert isinstance(text, str), (logical_id, name)
        found[logical_id] = re.sub(r"\$\{([\w:]+)\}", lambda m: values[m.group(1)], text)
    return found


def test_every_name_the_stack_gives_is_its_own() -> None:
    """Two stacks (dev and prod) in one account and region never ask for the same name. SAM
    named the sweeper's schedule after its logical id, the same in every stack."""
    dev, prod = names("dev", "dispatch-dev"), names("prod", "dispatch-prod")
    assert {"LeaseSweeperFunctionEveryMinute", "OutboxRelayFunctionEveryMinute"} <= set(dev)
    clashes = {k for k in dev.keys() & prod.keys() if dev[k] == prod[k]}
    assert not clashes, {k: dev[k] for k in clashes}


def endpoints(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return of_type(template, "AWS::EC2::VPCEndpoint")


def test_a_vpc_with_endpoints_already_gets_none_twice() -> None:
    """Interface endpoints with private DNS fail where the VPC has one for the service, and a
    route table takes one S3 gateway endpoint: CreateVpcEndpoints=false uses what is there."""
    found = endpoints(source())
    services = {str(e["Properties"]["ServiceName"]) for e in found.values()}
    for service in ("sqs", "events", "s3", "secretsmanager"):
        assert any(s.endswith(f".{service}'}}") or s.endswith(f".{service}") for s in services), (
            service,
            services,
        )
    first = Deploy(source(), **NETWORK)
    second = Deploy(source(), **{**NETWORK, "CreateVpcEndpoints": "false", "Stage": "prod"})
    assert all(first.created(e) for e in found)
    assert not any(second.created(e) for e in found)
    assert not second.created("EndpointSecurityGroup")
    assert second.created("DatabaseCluster") and second.refusals() == []


# -- 3. sam deploy --guided with the defaults ---------------------------------------------------


def test_missing_network_is_refused_before_anything_is_created() -> None:
    """The defaults leave VpcId, SubnetIds and RouteTableIds empty: a rule refuses the deploy
    at once (a stack that failed mid-way would stay in ROLLBACK_COMPLETE)."""
    refused = Deploy(source()).refusals()
    assert any("VpcId" in r for r in refused), refused
    assert any("SubnetIds" in r for r in refused), refused
    assert any("RouteTableIds" in r for r in refused), refused
    assert Deploy(source(), **NETWORK).refusals() == []
    only_vpc = Deploy(source(), VpcId=NETWORK["VpcId"]).refusals()
    assert len(only_vpc) == 2, only_vpc
    # Endpoints of the VPC's own: no route tables needed. Your own database: no VPC at all.
    assert (
        Deploy(
            source(), **{**NETWORK, "RouteTableIds": "", "CreateVpcEndpoints": "false"}
        ).refusals()
        == []
    )
    assert Deploy(source(), **EXISTING_DATABASE).refusals() == []
    assert Deploy(source(), ExistingDatabaseUrl="postgresql://owner@db/x").refusals() != []


# -- 4. the migrations' custom resource -------------------------------------------------------


def test_migrations_wait_for_what_they_reach_and_answer_in_bounded_time() -> None:
    template = generated()
    resources = template["Resources"]
    migrations = resources["Migrations"]
    # Its answer goes to a presigned S3 address through the S3 gateway endpoint, its password
    # comes from Secrets Manager through its endpoint, its statements through the proxy: it
    # starts after each (when this stack makes them) and is deleted before them.
    handle = resources[migrations["DependsOn"]]
    assert handle["Type"] == "AWS::CloudFormation::WaitConditionHandle"
    waits = set(refs_in(handle["Metadata"]))
    assert {"DatabaseProxyTargets", "S3Endpoint", "SecretsManagerEndpoint"} <= waits, waits
    # A lost answer fails the deploy soon after the function's own deadline, not in an hour.
    timeout = migrations["Properties"]["ServiceTimeout"]
    migrator = resources["MigrateFunction"]["Properties"]
    assert migrator["Timeout"] < timeout <= migrator["Timeout"] + 120


def test_no_function_runs_before_its_schema() -> None:
    """Every function that reaches the database is created or updated after the migrations
    (its alias and version follow it); only the migrator, the console, which serves
    files, the push authorizer, which checks a signature, the push poster, which calls
    the management API outside the VPC, the positions consumer, which writes Redis only, and
    the two deploy-time custom resources (the account's API Gateway role, old versions),
    which call AWS APIs only, are not."""
    template = generated()
    for logical_id, function in functions(template).items():
        if logical_id in (
            "MigrateFunction",
            "ConsoleFunction",
            "PushAuthorizerFunction",
            "PushPosterFunction",
            "PositionsFunction",
            "ApiGatewayAccountFunction",  # deploy-time custom resources, no database
            "PruneVersionsFunction",
        ):
            continue
        assert function.get("DependsOn") == "Migrations", logical_id
    for logical_id, version in of_type(template, "AWS::Lambda::Version").items():
        assert version["Properties"]["FunctionName"]["Ref"] in functions(template), logical_id


# -- 5. the live alias follows the layer and the parameters -----------------------------------


def versions(template: dict[str, Any]) -> dict[str, str]:
    """Function -> the logical id of its published version (a new id is a new version)."""
    return {
        v["Properties"]["FunctionName"]["Ref"]: logical_id
        for logical_id, v in of_type(template, "AWS::Lambda::Version").items()
    }


def aliased(template: dict[str, Any]) -> set[str]:
    return {
        a["Properties"]["FunctionName"]["Ref"]
        for a in of_type(template, "AWS::Lambda::Alias").values()
    }


def test_a_new_layer_publishes_a_new_version_of_every_aliased_function() -> None:
    """shared/ is nearly all the logic: a change to it alone (a new layer object, as sam
    package makes) must move every alias, or the API keeps serving the old code while the
    queue consumers run $LATEST."""
    before, after = generated(), transformed(layer="s3://artifacts/layer-2", **NETWORK)
    assert aliased(before) == set(versions(before))
    assert aliased(before) >= {"AcceptJobFunction", "CreateJobFunction", "TransitionFunction"}
    old, new = versions(before), versions(after)
    for function in aliased(before):
        assert old[function] != new[function], f"{function} stays on the old layer"
    # and nothing else changes a version: the same template twice gives the same ids
    assert versions(transformed(**NETWORK)) == old


# Parameters that are secrets (a URL with a password): kept out of the version's
# description, which anyone who may read the function sees. docs/deploy.md says how a
# change of them reaches the alias.
SECRET_PARAMETERS = {"ExistingDatabaseUrl", "ExistingDatabaseAppUrl", "ExistingRedisUrl"}
# Parameters whose settings only the console function reads (it has no alias: it runs the
# latest version, so a change reaches it at once). A description holds 256 characters, too
# few for addresses.
CONSOLE_PARAMETERS = {"ConsoleUrl", "ConsoleBbox", "ConsoleTiles", "JwtIssuer"}
CONSOLE_SETTINGS = ("console_bbox", "console_tiles", "console_signin_url")


def settings_parameters(template: dict[str, Any], function: str) -> set[str]:
    """The parameters a function's environment comes from: directly, or through a condition."""
    variables = template["Resources"][function]["Properties"]["Environment"]["Variables"]
    found = set(refs_in(variables))
    conditions = re.findall(r"'Fn::If': \['(\w+)'", str(variables))

    def through(condition: str) -> set[str]:
        node = template["Conditions"][condition]
        names = set(refs_in(node))
        for nested in re.findall(r"'Condition': '(\w+)'", str(node)):
            names |= through(nested)
        return names

    for condition in conditions:
        found |= through(condition)
    return found & set(template["Parameters"])


def described(template: dict[str, Any], function: str, **given: str) -> str:
    """The resolved description of the function's version: CloudFormation replaces a version
    (publishes a new one) when it changes."""
    version = template["Resources"][versions(template)[function]]
    text = version["Properties"]["Description"]["Fn::Sub"]
    values = parameters(**given)
    return re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], text)


def test_a_changed_parameter_publishes_a_new_version() -> None:
    """LeaseSeconds and the rest reach the functions as settings: a change to any of them must
    reach the alias too. Every parameter an aliased function's settings come from is in its
    version's description, but for secrets and the console's own."""
    template = generated()
    for function in aliased(template) - {"MigrateFunction"}:
        reached = settings_parameters(template, function)
        needed = reached - SECRET_PARAMETERS - CONSOLE_PARAMETERS
        assert {"LeaseSeconds", "ConsoleUrl"} <= reached and "LeaseSeconds" in needed
        text = template["Resources"][versions(template)[function]]["Properties"]["Description"]
        assert needed <= set(refs_in(text)), f"{function}: {sorted(needed - set(refs_in(text)))}"
        assert not SECRET_PARAMETERS & set(refs_in(text)), function
        before = described(template, function, **NETWORK)
        assert described(template, function, **{**NETWORK, "LeaseSeconds": "900"}) != before
        assert len(described(template, function, **NETWORK, ExistingRedisIsCluster="false")) < 256


def test_the_console_settings_reach_the_console_at_once() -> None:
    """ConsoleUrl and its kin are read by the console function alone, which runs its latest
    version (no alias): a change of them needs no new version anywhere."""
    code = {
        p: p.read_text() for f in ("shared", "functions") for p in (REPO_ROOT / f).rglob("*.py")
    }
    readers = {
        p.relative_to(REPO_ROOT).parts[:2]
        for p, text in code.items()
        if any(s in text for s in CONSOLE_SETTINGS) and p.parent.name != "config"
    }
    assert readers == {("functions", "console")}, readers
    assert "ConsoleFunction" not in aliased(generated())


# -- 6. alarms that notify ----------------------------------------------------------------------


def test_alarms_publish_to_a_topic_cloudwatch_may_encrypt_for() -> None:
    """alias/aws/sns's policy lets no service but SNS use it: every alarm action failed."""
    resources = source()["Resources"]
    topic = resources["AlarmTopic"]["Properties"]
    assert topic["KmsMasterKeyId"] == {"Ref": "DispatchKey"}
    statements = resources["DispatchKey"]["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = [
        s for s in statements if s["Principal"].get("Service") == "cloudwatch.amazonaws.com"
    ]
    assert cloudwatch, "CloudWatch may not use the topic's key"
    allowed = {a for s in cloudwatch if s["Effect"] == "Allow" for a in s["Action"]}
    assert {"kms:Decrypt", "kms:GenerateDataKey*"} <= allowed
    alarms = of_type(generated(), "AWS::CloudWatch::Alarm")
    assert alarms
    for logical_id, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": "AlarmTopic"}], logical_id


# -- 7. throttles sized from the load ----------------------------------------------------------


def seed_rate(row: str) -> float:
    """Requests per second of the seed's load, from docs/scaling.md's load table."""
    scaling = (REPO_ROOT / "docs" / "scaling.md").read_text()
    line = next(line for line in scaling.splitlines() if line.startswith(f"| {row} |"))
    figure = re.search(r"([\d.]+)(k?)/s", line.split("|")[2])
    assert figure is not None, line
    return float(figure.group(1)) * (1000 if figure.group(2) else 1)


ACCOUNT_RATE, ACCOUNT_BURST = 10_000, 5_000  # API Gateway's default quotas per region


def test_each_route_is_throttled_above_its_seed_load() -> None:
    """The default throttle (1,000/s) would answer most of the seed's 3,300 location reports a
    second with 429: the busy routes have their own limits, 1.5x their peak."""
    (stage,) = (
        stage
        for stage in of_type(generated(), "AWS::ApiGatewayV2::Stage").values()
        if stage["Properties"]["ApiId"] == {"Ref": "HttpApi"}
    )
    props = stage["Properties"]
    served = {r.route_key for r in routes()}
    loads = {
        "PUT /workers/me/location": seed_rate("worker locations"),
        "GET /jobs/nearby": seed_rate("nearby searches"),
    }
    assert loads["PUT /workers/me/location"] == 3300
    for key, limits in props["RouteSettings"].items():
        assert key in served, key
        assert limits["ThrottlingRateLimit"] <= ACCOUNT_RATE
        assert limits["ThrottlingBurstLimit"] <= ACCOUNT_BURST
    for key, load in loads.items():
        limits = props["RouteSettings"][key]
        assert limits["ThrottlingRateLimit"] >= 1.5 * load, key
        assert limits["ThrottlingBurstLimit"] >= load, key
    assert props["DefaultRouteSettings"]["ThrottlingRateLimit"] >= 10 * seed_rate("accept attempts")


# -- 8. queue consumers that cannot take everything -------------------------------------------


def test_queue_consumers_are_capped() -> None:
    """A FIFO consumer scales to one environment per message group (job): uncapped, a backlog
    would take the API's concurrency and the proxy's connections. The position stream's
    consumer runs one environment per shard (no parallelization), and reaches no database."""
    mappings = of_type(generated(), "AWS::Lambda::EventSourceMapping")
    queues = {k: m for k, m in mappings.items()
              if "Queue" in m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]}  # fmt: skip
    # the outbox, the offer waves, push's deliveries and its gone reports
    assert len(queues) == 4
    for logical_id, mapping in queues.items():
        cap = mapping["Properties"]["ScalingConfig"]["MaximumConcurrency"]
        assert 2 <= cap <= 20, logical_id  # Lambda's floor is 2; docs/scaling.md sizes it
    (stream,) = (m["Properties"] for k, m in mappings.items() if k not in queues)
    assert stream["EventSourceArn"] == {"Fn::GetAtt": ["PositionStream", "Arn"]}
    assert stream.get("ParallelizationFactor", 1) == 1  # a worker's reports stay in order
    assert stream["MaximumRecordAgeInSeconds"] <= 120  # the freshness period: older is useless


# -- 9. photo uploads may write photos and nothing else ----------------------------------------


def s3_grants(template: dict[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """Role -> every (S3 action, resource) its policies allow."""
    found: dict[str, list[tuple[str, Any]]] = {}
    for logical_id, role in of_type(template, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            if "Fn::If" in policy:  # a policy only with the database made here
                policy = policy["Fn::If"][1]
            document = policy["PolicyDocument"]
            for statement in document["Statement"] if isinstance(document, dict) else []:
                actions = statement.get("Action", [])
                for action in [actions] if isinstance(actions, str) else actions:
                    if action.startswith("s3:"):
                        found.setdefault(logical_id, []).append((action, statement["Resource"]))
    return found


def test_only_the_photo_function_touches_s3_and_only_photos() -> None:
    """And the retention duty, which only writes the archive (never reads or deletes it)."""
    grants = s3_grants(generated())
    assert set(grants) == {"TransitionFunctionRole", "RetentionFunctionRole"}, grants
    archive = {"Fn::Sub": "${ArchiveBucket.Arn}/history/*"}
    assert grants["RetentionFunctionRole"] == [("s3:PutObject", archive)]
    actions = dict(grants["TransitionFunctionRole"])
    assert set(actions) == {"s3:PutObject", "s3:GetObject", "s3:ListBucket"}, actions
    photos = {"Fn::Sub": "${PhotoBucket.Arn}/photos/*"}
    assert actions["s3:PutObject"] == photos and actions["s3:GetObject"] == photos
    assert actions["s3:ListBucket"] == {"Fn::GetAtt": ["PhotoBucket", "Arn"]}


# -- 10. TLS to the proxy, the console's sign-in, the user pool --------------------------------


def test_the_proxy_certificate_is_verified() -> None:
    """sslmode=require encrypts but takes any certificate. verify-full checks the chain and
    the host name against the roots the layer ships (certifi's bundle, where Amazon's roots
    are, which RDS Proxy's ACM certificates chain to)."""
    template = source()
    urls = [
        template["Globals"]["Function"]["Environment"]["Variables"]["DATABASE_URL"],
        template["Resources"]["MigrateFunction"]["Properties"]["Environment"]["Variables"][
            "DATABASE_URL"
        ],
    ]
    for url in urls:
        created = url["Fn::If"][1]["Fn::Sub"]
        assert "sslmode=verify-full" in created and "sslmode=require" not in created
        root = re.search(r"sslrootcert=([^&]+)", created)
        assert root is not None and root.group(1) == "/opt/python/certifi/cacert.pem"
    bundle = Path(certifi.where())
    assert bundle.relative_to(Path(certifi.__file__).parent.parent) == Path("certifi/cacert.pem")
    text = bundle.read_text()
    for root_name in (
        "Amazon Root CA 1",
        "Amazon Root CA 2",
        "Amazon Root CA 3",
        "Amazon Root CA 4",
    ):
        assert f'# Label: "{root_name}"' in text, root_name
    layer = (REPO_ROOT / "shared" / "requirements.txt").read_text()
    assert re.search(r"^certifi==", layer, re.M), "the layer must ship the bundle"


def test_the_console_signs_in_with_the_code_flow_and_pkce() -> None:
    template = source()
    client = template["Resources"]["ConsoleClient"]["Properties"]
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["GenerateSecret"] is False  # a public client: PKCE, no secret in a page
    signin = template["Globals"]["Function"]["Environment"]["Variables"][
        "DISPATCH_CONSOLE_SIGNIN_URL"
    ]
    address = signin["Fn::If"][1]["Fn::Sub"]
    assert "/oauth2/authorize?response_type=code&" in address and "token" not in address


def test_the_prod_user_pool_cannot_be_deleted() -> None:
    pool = source()["Resources"]["UserPool"]["Properties"]
    assert Deploy(source(), Stage="prod").value(pool["DeletionProtection"]) == "ACTIVE"


# -- cost --------------------------------------------------------------------------------------

# Latency-bound API functions, restored from SnapStart snapshots; the console (files), health
# (a probe), ops (four reads by a person) and rosters (a person's occasional edit) gain
# nothing from it and pay for each snapshot.
SNAPSTART = {
    "CreateJobFunction", "AcceptJobFunction", "JobQueriesFunction", "WorkersFunction",
    "TransitionFunction", "OffersFunction", "ApplicationsFunction",
}  # fmt: skip


def test_snapstart_only_where_it_pays() -> None:
    template = generated()
    snapped = {
        logical_id
        for logical_id, f in functions(template).items()
        if f["Properties"].get("SnapStart", {}).get("ApplyOn") == "PublishedVersions"
    }
    assert snapped == SNAPSTART
    for logical_id, f in functions(template).items():
        assert "ProvisionedConcurrencyConfig" not in f["Properties"], logical_id  # excluded


def test_every_log_group_expires() -> None:
    """Lambda's own log groups never expire: every function logs to a group made here."""
    template = generated()
    groups = of_type(template, "AWS::Logs::LogGroup")
    for logical_id, group in groups.items():
        assert "RetentionInDays" in group["Properties"], logical_id
    for logical_id, function in functions(template).items():
        logging = function["Properties"]["LoggingConfig"]
        assert logging["LogGroup"]["Ref"] in groups, logical_id
        # no START/END/REPORT lines per invocation (billed per GB ingested); errors still log
        assert logging["SystemLogLevel"] == "WARN", logical_id


# -- issue 21, point 13: no claim of tracing that nothing does ---------------------------------

TRACERS = re.compile(
    r"^\s*(from|import) (aws_xray_sdk|aws_lambda_powertools\.tracing)|\bTracer\(", re.M
)


def test_active_tracing_only_with_a_tracer() -> None:
    """Active tracing samples requests and bills for each trace; without a tracer in the code
    a trace holds only Lambda's own segments. Either a tracer runs or no function claims it."""
    code = [p for folder in ("shared", "functions") for p in (REPO_ROOT / folder).rglob("*.py")]
    traced = any(TRACERS.search(p.read_text()) for p in code)
    for logical_id, function in functions(generated()).items():
        mode = function["Properties"].get("TracingConfig", {}).get("Mode", "PassThrough")
        assert mode != "Active" or traced, logical_id


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_the_template_transforms_for_each_stage_and_database(stage: str) -> None:
    """What the other tests read is what SAM makes, for every way of deploying."""
    for given in (NETWORK, EXISTING_DATABASE, {**NETWORK, "CreateVpcEndpoints": "false"}):
        template = transformed(**given, Stage=stage)
        assert functions(template) and Deploy(source(), **given, Stage=stage).refusals() == []


# -- issue 34, point 1: a fresh account's first deploy ------------------------------------------


def test_the_websocket_stage_waits_for_the_accounts_cloudwatch_role() -> None:
    """A stage that logs access fails on an account with no API Gateway CloudWatch role (a new
    account's case): the stage is made after the custom resource that sets one where none is."""
    resources = generated()["Resources"]
    (stage_id,) = (
        k
        for k, r in of_type(generated(), "AWS::ApiGatewayV2::Stage").items()
        if r["Properties"]["ApiId"] == {"Ref": "PushApi"}
    )
    assert "AccessLogSettings" in resources[stage_id]["Properties"]
    # and after the position route, whose throttling it sets
    assert resources[stage_id]["DependsOn"] == ["ApiGatewayAccount", "PositionRoute"]
    assert set(resources[stage_id]["Properties"]["RouteSettings"]) == {"position"}
    account = resources["ApiGatewayAccount"]
    assert account["Type"] == "Custom::ApiGatewayAccount"
    assert account["Properties"]["RoleArn"] == {"Fn::GetAtt": ["ApiGatewayCloudWatchRole", "Arn"]}
    function = resources["ApiGatewayAccountFunction"]["Properties"]
    assert (
        function["Timeout"] < account["Properties"]["ServiceTimeout"] <= function["Timeout"] + 120
    )
    role = resources["ApiGatewayCloudWatchRole"]
    assert role["DeletionPolicy"] == "Retain"  # API Gateway cannot unset a role it names
    assert role["Properties"]["Path"] == "/dispatch-apigateway/"
    (policy,) = role["Properties"]["ManagedPolicyArns"]
    assert policy["Fn::Sub"].endswith("policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")


def test_the_engine_version_is_a_parameter_aws_publishes() -> None:
    """The default is an Aurora PostgreSQL version AWS's release notes
    list (docs/deploy.md cites them), and a deploy may choose another."""
    parameter = source()["Parameters"]["DatabaseEngineVersion"]
    assert parameter["Default"] == "17.7"
    assert re.fullmatch(parameter["AllowedPattern"], "16.10")
    assert not re.fullmatch(parameter["AllowedPattern"], "17")
    cluster = source()["Resources"]["DatabaseCluster"]["Properties"]
    assert cluster["EngineVersion"] == {"Ref": "DatabaseEngineVersion"}
    deploy = (REPO_ROOT / "docs" / "deploy.md").read_text()
    assert "17.7" in deploy and "AuroraPostgreSQLReleaseNotes" in deploy


# -- issue 34, point 10: old versions ------------------------------------------------------------


def test_every_published_version_is_pruned_and_only_versions_may_be_deleted() -> None:
    """VersionPruning names every aliased function's current version: a deploy that publishes
    one changes its properties, so it runs again; the pruner may delete versions (qualified
    ARNs) of those functions and nothing else."""
    template = generated()
    pruning = template["Resources"]["VersionPruning"]["Properties"]
    named = {ref["Ref"] for ref in pruning["Versions"]}
    assert named == set(versions(template).values())
    assert int(pruning["RollbackVersions"]) >= 1
    after = transformed(layer="s3://artifacts/layer-2", **NETWORK)
    assert {
        r["Ref"] for r in after["Resources"]["VersionPruning"]["Properties"]["Versions"]
    } != named
    role = template["Resources"]["PruneVersionsFunctionRole"]["Properties"]
    (statements,) = [p["PolicyDocument"]["Statement"] for p in role["Policies"]]
    deleting = [s for s in statements if "lambda:DeleteFunction" in str(s["Action"])]
    assert len(deleting) == 1
    resources = deleting[0]["Resource"]
    assert {r["Fn::Sub"] for r in resources} == {f"${{{f}.Arn}}:*" for f in aliased(template)}
