"""A tool that sends the OpenAPI document's examples (Swagger UI's "Try it out", schemathesis's
examples) sends each with the Idempotency-Key example beside it: no two share one, so none is
refused 422 IDEMPOTENCY_KEY_REUSED for another's body (issue 34, point 6)."""

from typing import Any

import requests

from dispatch_local import tokens

ROLE = {"POST /jobs": "business", "POST /jobs/{job_id}/rating": "business"}


def example_of(parameter: dict[str, Any]) -> Any:
    return parameter.get("example", parameter.get("schema", {}).get("example"))


def test_every_example_sent_as_written_is_never_a_reused_key(stack: str) -> None:
    document = requests.get(f"{stack}/openapi.json", timeout=30).json()
    sent = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None or "example" not in body:
                continue
            route = f"{method.upper()} {path}"
            parameters = operation.get("parameters", [])
            url = path.format(**{p["name"]: example_of(p) for p in parameters if p["in"] == "path"})
            key = next(example_of(p) for p in parameters if p["name"] == "Idempotency-Key")
            role = ROLE.get(route, "business" if "assign" in path else "worker")
            reply = requests.request(
                method,
                stack + url,
                json=body["example"],
                headers={
                    "Authorization": f"Bearer {tokens.issue('examples-' + role, role)}",
                    "Idempotency-Key": key,
                },
                timeout=30,
            )
            assert reply.status_code < 500, (route, reply.text)
            assert reply.status_code != 422, (route, reply.text)
            sent += 1
    assert sent >= 10
