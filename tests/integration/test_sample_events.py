"""events/ holds a sample event for every function (for `sam local invoke` where Docker
exists); each one runs through its real handler here, against the real database."""

import json
from pathlib import Path
from typing import Any

import pytest

from dispatch_local import REPO_ROOT
from dispatch_local.events import LambdaContext
from dispatch_local.template import Function, handler_of, load_template

EVENTS = REPO_ROOT / "events"


def functions() -> list[Function]:
    return [
        Function(
            function=logical_id,
            code_uri=(REPO_ROOT / res["Properties"]["CodeUri"]).resolve(),
            handler=res["Properties"].get("Handler", "app.lambda_handler"),
        )
        for logical_id, res in load_template()["Resources"].items()
        if res["Type"] == "AWS::Serverless::Function"
    ]


@pytest.mark.parametrize("function", functions(), ids=lambda f: f.function)
def test_every_function_has_a_sample_that_its_handler_answers(
    function: Function, conn: Any
) -> None:
    sample: Path = EVENTS / f"{function.code_uri.name}.json"
    assert sample.exists(), f"no sample event for {function.function}"
    if function.function == "MigrateFunction":
        return  # it answers CloudFormation's URL: run for real in test_migrate_function.py
    result = handler_of(function)(
        json.loads(sample.read_text()), LambdaContext(function_name=function.function)
    )
    if "statusCode" in result:  # an API function: a contract answer, never a 5xx
        assert result["statusCode"] < 500, result
        json.loads(result["body"])
    elif "batchItemFailures" in result:  # the queue consumer took its record
        assert result["batchItemFailures"] == []
    else:  # the scheduled sweeper reports what it did
        assert set(result) >= {"reopened", "expired_keys", "relayed"}
