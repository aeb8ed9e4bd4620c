"""The template and the code agree: environment, permissions, layout. Checked without AWS."""

import importlib
import pkgutil
import re

from dispatch import config
from dispatch.config import Group
from dispatch_local import REPO_ROOT
from dispatch_local.template import load_template

# What each AWS call the code makes needs, and the SAM policy templates that grant it.
CALLS = {
    "send_message_batch": "sqs:SendMessage",  # the relay
    ".send_message(": "sqs:SendMessage",  # offer waves
    "generate_presigned_post": "s3:PutObject",  # the presigned upload acts as the role
    "head_object": "s3:GetObject",  # attach looks at the upload
    "put_events": "events:PutEvents",
    "get_secret_value": "secretsmanager:GetSecretValue",  # the migrator: the role's password
}
GRANTED_BY = {
    "SQSSendMessagePolicy": {"sqs:SendMessage"},
    "EventBridgePutEventsPolicy": {"events:PutEvents"},
}
# Which functions reach which call: writers relay their events after commit (the offer waves,
# the applications and the sweeper's choice deadline theirs too), the outbox relay runs the
# catch-up, the transition function presigns uploads, the publisher puts and starts offer
# rounds, the wave function schedules the next wave, the migrator reads the application role's
# password.
NEEDS = {
    "CreateJobFunction": {"sqs:SendMessage"},
    "AcceptJobFunction": {"sqs:SendMessage"},
    "ApplicationsFunction": {"sqs:SendMessage"},
    "TransitionFunction": {"sqs:SendMessage", "s3:PutObject", "s3:GetObject"},
    "LeaseSweeperFunction": {"sqs:SendMessage"},
    "OutboxRelayFunction": {"sqs:SendMessage"},
    "OutboxPublisherFunction": {"events:PutEvents", "sqs:SendMessage"},
    "OfferWavesFunction": {"sqs:SendMessage"},
    "MigrateFunction": {"secretsmanager:GetSecretValue"},
    # push: the sender puts deliveries for the poster, the poster reports gone connections
    "PushSenderFunction": {"sqs:SendMessage"},
    "PushPosterFunction": {"sqs:SendMessage"},
}


def granted_by(policy: object) -> set[str]:
    """The actions a SAM policy template or an inline statement (under !If) grants."""
    if isinstance(policy, dict) and "If" in policy:
        return set().union(*(granted_by(branch) for branch in policy["If"][1:]))
    if isinstance(policy, dict) and "Statement" in policy:
        found: set[str] = set()
        for statement in policy["Statement"]:
            actions = statement["Action"]
            found |= {actions} if isinstance(actions, str) else set(actions)
        return found
    if isinstance(policy, dict):
        return set().union(*(GRANTED_BY.get(name, set()) for name in policy))
    return set()


# Functions that never reach the database (the console serves files; the deploy's custom
# resources talk to Lambda and API Gateway), and stay that way.
NO_DATABASE = {
    "ConsoleFunction",
    "PushAuthorizerFunction",
    "PushPosterFunction",
    "PositionsFunction",
    "PruneVersionsFunction",
    "ApiGatewayAccountFunction",
}


def test_what_never_reaches_the_database_does_not_import_it() -> None:
    for logical_id in NO_DATABASE:
        code = load_template()["Resources"][logical_id]["Properties"]["CodeUri"]
        text = (REPO_ROOT / code / "app.py").read_text()
        assert "dispatch import db" not in text and "dispatch.db" not in text, logical_id


def environment_of(logical_id: str) -> set[str]:
    template = load_template()
    names = set(template["Globals"]["Function"]["Environment"]["Variables"])
    props = template["Resources"][logical_id]["Properties"]
    return names | set((props.get("Environment") or {}).get("Variables", {}))


# Settings one function alone reads, and sets for itself: the migrator signs in as the owner
# and writes the application role's and the archivist's timeouts and passwords (dispatch.roles).
OWN_SETTINGS = {
    "MigrateFunction": {
        "DISPATCH_STATEMENT_TIMEOUT_MS",
        "DISPATCH_LOCK_TIMEOUT_MS",
        "DATABASE_APP_SECRET_ARN",
        "DATABASE_ARCHIVIST_SECRET_ARN",
        "DISPATCH_MIGRATION_LOCK_TIMEOUT_MS",
        "DISPATCH_MIGRATION_ATTEMPTS",
        "DISPATCH_MIGRATION_STATEMENT_TIMEOUT_MS",
    },
    # Push: the $connect authorizer checks tokens; the publisher (each event it put) and the
    # sender (expired connections) hand deliveries to the poster, which alone talks to
    # connections and reports the gone ones back.
    "PushAuthorizerFunction": {"JWT_ISSUER", "JWT_AUDIENCE"},
    "OutboxPublisherFunction": {"PUSH_DELIVERY_QUEUE_URL"},
    "PushSenderFunction": {"PUSH_DELIVERY_QUEUE_URL"},
    "PushPosterFunction": {"PUSH_ENDPOINT", "PUSH_GONE_QUEUE_URL"},
    # The retention duty: where it archives, and how old and how many at a time; the migrator
    # writes the archivist's password as it does the application role's.
    "RetentionFunction": {
        "ARCHIVE_BUCKET",
        "DISPATCH_RETENTION_HOT_DAYS",
        "DISPATCH_RETENTION_BATCH_SIZE",
    },
}
# Read by local runs only, never deployed: a local server's password for a role (in AWS the
# password is a secret that only RDS Proxy and the migrator read).
# The local stack's token signing secret: its push authorizer verifies with it (in AWS, the
# issuer's published keys).
LOCAL_ONLY = {"DATABASE_APP_PASSWORD", "DATABASE_ARCHIVIST_PASSWORD", "DISPATCH_JWT_SECRET"}


def test_every_setting_the_code_reads_is_set_for_every_function() -> None:
    for module in pkgutil.iter_modules(config.__path__):  # every group, each in its module
        importlib.import_module(f"dispatch.config.{module.name}")
    read = {
        str(field.validation_alias)
        for group in Group.defined
        for field in group.model_fields.values()
    }
    own = set().union(*OWN_SETTINGS.values())
    template = load_template()
    for logical_id, res in template["Resources"].items():
        if res["Type"] == "AWS::Serverless::Function":
            expected = read - own - LOCAL_ONLY | OWN_SETTINGS.get(logical_id, set())
            missing = expected - environment_of(logical_id)
            assert not missing, f"{logical_id} lacks {sorted(missing)}"
            strays = (own - OWN_SETTINGS.get(logical_id, set()) | LOCAL_ONLY) & environment_of(
                logical_id
            )
            assert not strays, f"{logical_id} is given {sorted(strays)}, another's settings"


def test_the_code_makes_no_aws_call_the_table_does_not_know() -> None:
    shared = "\n".join(p.read_text() for p in (REPO_ROOT / "shared").rglob("*.py"))
    called = set(re.findall(r"aws\.client\(\"\w+\"\)\.(\w+)\(", shared))
    known = {
        "send_message_batch",
        "send_message",
        "generate_presigned_post",
        "head_object",
        "put_events",
        "get_secret_value",
    }
    assert called == known, called
    for call in CALLS:
        assert call in shared, call


def test_every_aws_action_the_code_needs_is_granted() -> None:
    template = load_template()
    for logical_id, needed in NEEDS.items():
        policies = template["Resources"][logical_id]["Properties"].get("Policies", [])
        granted = set().union(*(granted_by(policy) for policy in policies))
        assert needed <= granted, f"{logical_id} needs {sorted(needed - granted)}"


def test_only_the_outbox_publisher_puts_on_the_bus() -> None:
    """One outbox: every event reaches the bus through the publisher, nothing else may put."""
    putting = {
        logical_id
        for logical_id, res in load_template()["Resources"].items()
        if res["Type"] == "AWS::Serverless::Function"
        and "events:PutEvents"
        in set().union(*(granted_by(p) for p in res["Properties"].get("Policies", [])))
    }
    assert putting == {"OutboxPublisherFunction"}


def route_path(contract_path: str) -> str:
    """The contract writes /jobs/nearby?lat=.. and /photos/{before\\|after}; SAM, plain paths."""
    return contract_path.split("?")[0].replace("{before\\|after}", "{slot}")


def test_every_contract_route_is_served_by_exactly_one_function() -> None:
    contract = (REPO_ROOT / "docs" / "api.md").read_text()
    table = re.findall(r"^\| (GET|POST|PUT) (/[^ ]+) \|", contract, flags=re.M)
    served: dict[str, list[str]] = {}
    for logical_id, res in load_template()["Resources"].items():
        for event in (res.get("Properties", {}).get("Events") or {}).values():
            if event.get("Type") == "HttpApi":
                key = f"{event['Properties']['Method']} {event['Properties']['Path']}"
                served.setdefault(key, []).append(logical_id)
    assert len(table) == 11, "could not read the route table of the contract"
    expected = {f"{method} {route_path(path)}" for method, path in table}
    assert expected <= set(served), sorted(expected - set(served))
    assert all(len(functions) == 1 for functions in served.values()), served


def connects_as(policy: str) -> dict[str, object]:
    return {"If": ["CreateDatabase", {"Ref": policy}, {"Ref": "AWS::NoValue"}]}


def test_every_function_may_connect_as_its_own_database_user_only() -> None:
    """With the database created here, functions sign in with IAM tokens (db.iam_token):
    rds-db:connect for dispatch_app to every function that reaches the database, for the
    owner (dispatch_admin) to the migrator alone, for the archivist (dispatch_archivist) to
    the retention duty alone, and the URLs they are given agree."""
    template = load_template()
    policy_of = {
        "DatabaseConnectPolicy": "dispatch_app",
        "OwnerDatabaseConnectPolicy": "dispatch_admin",
        "ArchivistDatabaseConnectPolicy": "dispatch_archivist",
    }
    own = {"MigrateFunction": "OwnerDatabaseConnectPolicy",
           "RetentionFunction": "ArchivistDatabaseConnectPolicy"}  # fmt: skip
    for logical_id, res in template["Resources"].items():
        if res["Type"] != "AWS::Serverless::Function" or logical_id in NO_DATABASE:
            continue
        policies = res["Properties"].get("Policies", [])
        mine = own.get(logical_id, "DatabaseConnectPolicy")
        assert connects_as(mine) in policies, logical_id
        assert not [p for p in policy_of if p != mine and connects_as(p) in policies], logical_id
    resources = template["Resources"]
    for policy, user in policy_of.items():
        (statement,) = resources[policy]["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Resource"]["Sub"][0].endswith(f"/{user}"), policy
    url = template["Globals"]["Function"]["Environment"]["Variables"]["DATABASE_URL"]
    assert "//dispatch_app@" in url["If"][1]["Sub"]
    for function, policy in own.items():
        variables = resources[function]["Properties"]["Environment"]["Variables"]
        assert f"//{policy_of[policy]}@" in variables["DATABASE_URL"]["If"][1]["Sub"], function
