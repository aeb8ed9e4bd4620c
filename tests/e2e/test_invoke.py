"""`dispatch invoke`, the third way in: every sample event in events/ through its function's
real handler, as `sam local invoke` would run it, against the running local stack's services
(and, once, against embedded ones with no stack running)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dispatch_local import REPO_ROOT, tokens
from dispatch_local.invoke import (
    functions,
    signs_in_as_archivist,
    signs_in_as_owner,
    template_environment,
)
from dispatch_local.services import archivist_url
from tests.e2e.client import Client
from tests.support import job_body

EVENTS = REPO_ROOT / "events"
FUNCTIONS = functions()


def dispatch(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: no test database or Redis in its environment."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DATABASE_", "REDIS_", "AWS_", "OUTBOX_", "OFFER_", "EVENT_BUS"))
    }
    return subprocess.run(
        [sys.executable, "-m", "dispatch_local.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        # The relay's run: one pass, not the 55 s of polling its template gives it in AWS
        # (a variable set where it runs wins over the template's, as `dispatch invoke` says).
        env={**environment, "DISPATCH_HOME": str(home), "DISPATCH_RELAY_POLL_SECONDS": "0"},
    )


def answer_of(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 1, f"stdout is the response alone: {result.stdout[:500]}"
    return json.loads(lines[0])


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_every_sample_event_runs_through_dispatch_invoke(
    logical_id: str, stack: str, stack_home: Path
) -> None:
    """Each sample answers as the README says, on the stack's database (which had none of the
    sample world): what it names is made first. Run again, it answers the same."""
    function = FUNCTIONS[logical_id]
    sample = EVENTS / f"{function.code_uri.name}.json"
    assert sample.exists(), f"no sample event for {logical_id}"
    if logical_id == "PushAuthorizerFunction":  # its sample's token is a placeholder
        refused = dispatch(stack_home, "invoke", "push_authorizer", "-e", str(sample))
        assert refused.returncode == 1 and "Unauthorized" in refused.stdout, refused.stdout
        event = json.loads(sample.read_text())
        event["queryStringParameters"]["token"] = tokens.issue("w-1", "worker")
        allowed = answer_of(
            dispatch(stack_home, "invoke", "push_authorizer", stdin=json.dumps(event))
        )
        assert allowed["policyDocument"]["Statement"][0]["Effect"] == "Allow", allowed
        assert allowed["context"]["sub"] == "w-1"
        return
    ran = dispatch(stack_home, "invoke", function.code_uri.name, "-e", str(sample))
    result = answer_of(ran)
    assert result is not None
    if logical_id == "PushConnectionsFunction":  # $connect stored the sample's connection
        assert result == {"statusCode": 200}
        again = answer_of(dispatch(stack_home, "invoke", "push", "-e", str(sample)))
        assert again == {"statusCode": 200}
    elif logical_id == "PushSenderFunction":  # its schedule: connections past their token's end
        assert set(result) == {"closed"}
    elif "statusCode" in result:  # an API function: it did what the sample asks
        assert 200 <= result["statusCode"] < 300, result
        if result["headers"]["Content-Type"].startswith("application/json"):
            json.loads(result["body"])
        else:  # the console's page
            assert result["body"].startswith("<!doctype html>")
        again = answer_of(dispatch(stack_home, "invoke", function.code_uri.name, "-e", str(sample)))
        assert again["statusCode"] == result["statusCode"], again
        if "idempotency-key" in json.loads(sample.read_text())["headers"]:
            assert again["headers"].get("Idempotent-Replayed") == "true", again
            assert again["body"] == result["body"]
    elif "batchItemFailures" in result:  # a queue consumer took its record
        assert result["batchItemFailures"] == []
    elif "Status" in result:  # a custom resource: it answered CloudFormation SUCCESS
        assert result["Status"] == "SUCCESS", result
        assert "CloudFormation's answer (taken by dispatch invoke): SUCCESS" in ran.stderr
        if logical_id == "MigrateFunction":  # already applied by the stack
            assert result["Data"]["Applied"] == ""
        elif logical_id == "ApiGatewayAccountFunction":  # the stand-in's account had no role
            assert result["Data"]["RoleArn"].startswith("arn:aws:iam::"), result
        else:  # the sample's function is not in the stand-in: nothing to prune
            assert logical_id == "PruneVersionsFunction"
            assert result["Data"] == {"Deleted": "0"}
    elif logical_id == "LeaseSweeperFunction":  # the scheduled sweeper reports what it did
        assert set(result) >= {"reopened", "expired_keys", "positions_pruned"}
    elif logical_id == "RetentionFunction":  # nothing on the stack is 30 days old
        assert result["left"] == 0 and result["rows_archived"] == 0, result
    elif logical_id == "PositionsFunction":  # the stream's batch: one worker's position
        assert result == {"written": 1, "dropped": 0}, result
    else:  # the scheduled relay: {} when the writers had relayed everything themselves
        assert logical_id == "OutboxRelayFunction"
        assert result == {} or result["relayed"] > 0


def test_the_samples_use_keys_of_their_own() -> None:
    keys = [
        json.loads(sample.read_text()).get("headers", {}).get("idempotency-key")
        for sample in sorted(EVENTS.glob("*.json"))
    ]
    used = [key for key in keys if key]
    assert len(used) >= 4 and len(set(used)) == len(used), used


def test_a_custom_resource_that_answers_failed_fails_the_invoke(
    stack_home: Path, stack: str
) -> None:
    # One second to live: its deadline timer answers FAILED at once, as it would in AWS.
    ran = dispatch(
        stack_home, "invoke", "migrate", "-e", str(EVENTS / "migrate.json"), "--timeout", "1"
    )
    assert ran.returncode == 1, ran.stderr[-2000:]
    assert json.loads(ran.stdout)["Status"] == "FAILED"
    assert "the custom resource answered FAILED" in ran.stderr
    assert "could not answer CloudFormation" not in ran.stderr  # its answer was taken here


def test_a_generated_event_piped_into_invoke_writes_to_the_stacks_database(
    stack: str, stack_home: Path
) -> None:
    body = json.dumps({**job_body(["wash"]), "skills": ["wash"]})
    event = dispatch(
        stack_home, "generate-event", "POST", "/jobs", "--sub", "biz-invoke", "--role", "business",
        "--body", body,
    )  # fmt: skip
    assert event.returncode == 0, event.stderr
    created = answer_of(dispatch(stack_home, "invoke", "CreateJobFunction", stdin=event.stdout))
    assert created["statusCode"] == 201
    job = json.loads(created["body"])
    # The same job, read over HTTP from the running stack: one database.
    seen = Client(stack, "biz-invoke", "business").send("GET", f"/jobs/{job['id']}")
    assert seen.status_code == 200 and seen.json() == job


def test_logs_go_to_stderr_and_errors_exit_non_zero(stack_home: Path, stack: str) -> None:
    swept = dispatch(
        stack_home, "invoke", "lease_sweeper", "-e", str(EVENTS / "lease_sweeper.json")
    )
    logged = [json.loads(line) for line in swept.stderr.splitlines() if line.startswith("{")]
    assert any(entry.get("message") == "sweep done" for entry in logged), swept.stderr
    assert set(answer_of(swept)) >= {"reopened", "expired_keys"}  # stdout: the response alone
    unknown = dispatch(stack_home, "invoke", "no_such_function", stdin="{}")
    assert unknown.returncode != 0 and "AcceptJobFunction (accept_job)" in unknown.stderr
    broken = dispatch(stack_home, "invoke", "outbox_publisher", stdin='{"Records": "nope"}')
    assert broken.returncode == 1
    assert set(json.loads(broken.stdout)) == {"errorMessage", "errorType"}


def test_env_json_points_every_function_at_the_running_stack(stack: str, stack_home: Path) -> None:
    running = json.loads((stack_home / "stack.json").read_text())["services"]
    found = json.loads(answer_of_text(dispatch(stack_home, "env-json")))
    assert set(found) == set(FUNCTIONS)
    for logical_id, environment in found.items():
        assert set(template_environment(FUNCTIONS[logical_id])) <= set(environment)
        # The migrator signs in as the owner, the retention duty as the archivist; every other
        # function as the application role.
        function = FUNCTIONS[logical_id]
        expected = (
            running["DATABASE_OWNER_URL"]
            if signs_in_as_owner(function)
            else archivist_url(running["DATABASE_OWNER_URL"])
            if signs_in_as_archivist(function)
            else running["DATABASE_URL"]
        )
        assert environment["DATABASE_URL"] == expected, logical_id
        assert environment["AWS_ENDPOINT_URL"] == running["AWS_ENDPOINT_URL"]
    aliased = json.loads(answer_of_text(dispatch(stack_home, "env-json", "--host-alias", "hd")))
    assert "127.0.0.1" not in json.dumps(aliased) and "//hd:" in json.dumps(aliased)


def answer_of_text(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_with_no_stack_running_the_readmes_first_example_works(tmp_path: Path) -> None:
    """`dispatch invoke accept_job -e events/accept_job.json` on a fresh clone: embedded
    services, an empty database, and the sample's job accepted by its worker."""
    ran = dispatch(tmp_path, "invoke", "accept_job", "-e", str(EVENTS / "accept_job.json"))
    result = answer_of(ran)
    assert result["statusCode"] == 200, result
    job = json.loads(result["body"])
    assert (job["id"], job["status"], job["assignee_id"]) == (
        "01935f7e-0000-7000-8000-000000000001",
        "assigned",
        "worker-1",
    )
    assert "sample world: made job 01935f7e-0000-7000-8000-000000000001" in ran.stderr
