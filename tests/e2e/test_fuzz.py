"""Schemathesis against the OpenAPI document the local stack serves, over real HTTP, with valid
tokens: whatever it sends (valid and invalid input alike), no answer is a 5xx, every status is
one the document lists for that route, and every body matches the document (the contract's
error body included)."""

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from dispatch_local import tokens
from tests.support import job_body

# In `make test` the examples are the same every run (CI must not pass or fail by luck); to
# explore, run with DISPATCH_FUZZ_RANDOM=1 and more examples, e.g. DISPATCH_FUZZ_EXAMPLES=500.
EXAMPLES_PER_ROUTE = int(os.environ.get("DISPATCH_FUZZ_EXAMPLES", "25"))
DERANDOMIZE = os.environ.get("DISPATCH_FUZZ_RANDOM") != "1"

# The role each route is for; ops reads jobs (a stranger's job is a plain 404).
ROLE = {
    "POST /jobs": "business",
    "GET /jobs/{job_id}": "ops",
    "GET /jobs/{job_id}/events": "ops",
}


@pytest.fixture(scope="module")
def fuzz_job(stack: str) -> str:
    """One real job, so that fuzzed paths sometimes meet a job that exists."""
    import requests

    headers = {
        "Authorization": f"Bearer {tokens.issue('fuzz-business', 'business')}",
        "Idempotency-Key": "fuzz-job",
    }
    reply = requests.post(f"{stack}/jobs", json=job_body(), headers=headers, timeout=30)
    assert reply.status_code == 201, reply.text
    return str(reply.json()["id"])


def cases() -> list[tuple[GenerationMode, str]]:
    """Each route of the document (read at collection; the stack serves the same one) with
    valid input, and with invalid input where it takes any (GET /health takes none)."""
    from dispatch_local.gateway import openapi_document
    from dispatch_local.template import routes

    document = openapi_document(routes())
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            route = f"{method.upper()} {path}"
            found.append((GenerationMode.POSITIVE, route))
            if operation.get("parameters") or operation.get("requestBody"):
                found.append((GenerationMode.NEGATIVE, route))
    return found


@pytest.fixture(scope="module")
def served_schema(stack: str) -> Any:
    return schemathesis.openapi.from_url(f"{stack}/openapi.json")


@pytest.mark.parametrize(("mode", "route"), cases())
def test_no_5xx_and_every_answer_as_documented(
    route: str, mode: GenerationMode, served_schema: Any, stack: str, fuzz_job: str
) -> None:
    """Valid input (positive) and invalid input (negative: wrong types, out of range, missing
    or extra fields) generated from the document, one route at a time."""
    method, path = route.split(" ", 1)
    operation = served_schema[path][method]
    role = ROLE.get(route, "worker")
    token = tokens.issue(f"fuzz-{role}", role)

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_ROUTE,
        derandomize=DERANDOMIZE,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def attempt(case: Any) -> None:
        job_id = (case.path_parameters or {}).get("job_id")
        if isinstance(job_id, str) and job_id.endswith("0"):
            case.path_parameters["job_id"] = fuzz_job  # now and then, a job that exists
        case.call_and_validate(
            base_url=stack,
            headers={"Authorization": f"Bearer {token}"},
            checks=[
                not_a_server_error,
                status_code_conformance,
                content_type_conformance,
                response_schema_conformance,
            ],
        )

    attempt()
