"""Over real HTTP against the local stack: races, idempotency, auth and bad input."""

from collections import Counter
from functools import partial
from typing import Any

import pytest
import requests

from dispatch.db import Connection
from tests.e2e.client import Client
from tests.security.test_tokens_keys_and_leaks import bad_tokens
from tests.support import in_parallel, job_body, returned


@pytest.fixture
def people(stack: str, conn: Connection) -> dict[str, Client]:
    clients = {
        "business": Client(stack, "biz-1", "business"),
        "ops": Client(stack, "ops-1", "ops"),
    }
    for i in range(20):
        clients[f"w{i}"] = w = Client(stack, f"w-{i}", "worker")
        # Warm the connection while we are at it: the race should be about the accept.
        assert w.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
    return clients


def post_job(people: dict[str, Client]) -> dict[str, Any]:
    reply = people["business"].send("POST", "/jobs", job_body(["wash"]))
    assert reply.status_code == 201, reply.text
    job: dict[str, Any] = reply.json()
    return job


def test_three_workers_tap_accept_at_once(people: dict[str, Client], conn: Connection) -> None:
    for _ in range(10):
        job = post_job(people)
        path = f"/jobs/{job['id']}/accept"
        tappers = [people[f"w{i}"] for i in range(3)]
        replies = returned(in_parallel([partial(w.send, "POST", path, {}) for w in tappers]))
        assert sorted(r.status_code for r in replies) == [200, 409, 409]
        for reply in replies:
            if reply.status_code == 409:
                assert reply.json()["error"]["code"] == "JOB_TAKEN"
                assert reply.json()["error"]["message"] == (
                    "This job was taken by another worker. More jobs coming!"
                )
        winner = next(r.json() for r in replies if r.status_code == 200)
        seen = people["ops"].send("GET", f"/jobs/{job['id']}").json()
        assert seen["assignee_id"] == winner["assignee_id"]
        assert seen["version"] == 2
        free_the_winners(conn)


def free_the_winners(conn: Connection) -> None:
    """Close this round's jobs so every worker can race again in the next one."""
    conn.execute(
        "UPDATE jobs SET status = 'cancelled', assignee_id = NULL, lease_expires_at = NULL "
        "WHERE status = 'assigned'"
    )


def test_twenty_workers_on_ten_jobs(people: dict[str, Client], conn: Connection) -> None:
    for round_ in range(3):
        jobs = [post_job(people) for _ in range(10)]
        # Two workers on every job, paired differently each round.
        paths = [f"/jobs/{jobs[(i * 7 + round_) % 10]['id']}/accept" for i in range(20)]
        calls = [partial(people[f"w{i}"].send, "POST", paths[i], {}) for i in range(20)]
        statuses = Counter(r.status_code for r in returned(in_parallel(calls)))
        assert statuses == {200: 10, 409: 10}
        holders = [people["ops"].send("GET", f"/jobs/{j['id']}").json() for j in jobs]
        assignees = [h["assignee_id"] for h in holders]
        assert None not in assignees
        assert len(set(assignees)) == 10
        free_the_winners(conn)


def test_concurrent_duplicates_answer_alike(people: dict[str, Client], conn: Connection) -> None:
    business = people["business"]
    body = job_body()
    replies = returned(
        in_parallel(
            [lambda: business.send("POST", "/jobs", body, key="dup-create") for _ in range(4)]
        )
    )
    assert {r.status_code for r in replies} == {201}
    assert len({r.text for r in replies}) == 1
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in replies) == [
        "",
        "true",
        "true",
        "true",
    ]
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 1}


def test_reuse_and_missing_key(people: dict[str, Client]) -> None:
    business = people["business"]
    assert business.send("POST", "/jobs", job_body(), key="k-1").status_code == 201
    reused = business.send("POST", "/jobs", job_body(["other"]), key="k-1")
    assert (reused.status_code, reused.json()["error"]["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")
    missing = business.send("POST", "/jobs", job_body(), key=None)
    assert missing.json()["error"]["code"] == "IDEMPOTENCY_KEY_REQUIRED"


@pytest.mark.parametrize("name", list(bad_tokens()))
def test_bad_tokens_are_401(stack: str, name: str) -> None:
    """Every token the authorizer must refuse (tests/security) is refused over HTTP too."""
    authorization = bad_tokens()[name]
    headers = {"Idempotency-Key": "k"}
    if authorization is not None:
        headers["Authorization"] = authorization
    reply = requests.post(f"{stack}/jobs", json=job_body(), headers=headers, timeout=10)
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "UNAUTHORIZED"


def test_wrong_role_and_strangers(people: dict[str, Client]) -> None:
    job = post_job(people)
    as_worker = people["w0"].send("POST", "/jobs", job_body())
    assert (as_worker.status_code, as_worker.json()["error"]["code"]) == (403, "FORBIDDEN")
    stranger = people["w5"].send("GET", f"/jobs/{job['id']}")
    assert (stranger.status_code, stranger.json()["error"]["code"]) == (404, "NOT_FOUND")


def test_bad_input_over_http(people: dict[str, Client], stack: str) -> None:
    business = people["business"]
    headers = {"Idempotency-Key": "raw-1", "Content-Type": "application/json"}
    broken = business.session.post(f"{stack}/jobs", data=b'{"location":', headers=headers)
    assert (broken.status_code, broken.json()["error"]["code"]) == (400, "VALIDATION_FAILED")
    unknown = business.send("POST", "/jobs", {**job_body(), "priority": "high"})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["details"]
    huge = business.session.post(
        f"{stack}/jobs", data=b"x" * (2 * 1024 * 1024), headers={**headers, "Idempotency-Key": "h"}
    )
    assert (huge.status_code, huge.json()["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    padded = business.send("POST", "/jobs", {**job_body(), "pad": "x" * 50_000})
    assert (padded.status_code, padded.json()["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")


def test_unknown_route_is_a_contract_404(stack: str) -> None:
    reply = requests.get(f"{stack}/nope", timeout=10)
    assert (reply.status_code, reply.json()["error"]["code"]) == (404, "NOT_FOUND")


def test_openapi_document_and_docs(stack: str) -> None:
    document = requests.get(f"{stack}/openapi.json", timeout=30).json()
    assert set(document["paths"]) >= {
        "/jobs",
        "/jobs/{job_id}",
        "/jobs/{job_id}/events",
        "/jobs/{job_id}/accept",
        "/workers/me",
        "/health",
    }
    accept = document["paths"]["/jobs/{job_id}/accept"]["post"]
    assert accept["security"] == [{"bearer": []}]
    assert "409" in accept["responses"]
    assert "Job" in document["components"]["schemas"]
    docs = requests.get(f"{stack}/docs", timeout=10)
    assert docs.status_code == 200
    assert "swagger-ui" in docs.text


def test_health(stack: str) -> None:
    assert requests.get(f"{stack}/health", timeout=10).json() == {"status": "ok"}


def test_the_api_docs_group_routes_and_give_examples_the_api_accepts(stack: str) -> None:
    """Swagger UI's material: every operation under a declared tag with a summary of its own
    (not its path), who may call it, how to get a token, and request examples that validate
    against the document and that the API takes (a job posted from the example: 201)."""
    import jsonschema

    document = requests.get(f"{stack}/openapi.json", timeout=30).json()
    declared = {tag["name"] for tag in document["tags"]}
    examples = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            route = f"{method.upper()} {path}"
            assert len(operation["tags"]) == 1 and operation["tags"][0] in declared, route
            assert operation["summary"] and operation["summary"] != route, route
            assert operation["description"].startswith(("Signed in as", "Anyone")), route
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            assert "example" in body, f"{route} has no request example"
            schema = {**body["schema"], "components": document["components"]}
            jsonschema.validate(body["example"], schema)
            examples[route] = body["example"]
    sign_in = document["components"]["securitySchemes"]["bearer"]["description"]
    assert "dispatch token --sub" in sign_in and "Cognito" in sign_in
    job = examples["POST /jobs"]
    assert -85 < job["location"]["lat"] < 85 and job["skills"] == ["wash"]
    business = Client(stack, "biz-docs-example", "business")
    assert business.send("POST", "/jobs", job).status_code == 201
    # The Idempotency-Key example is a fresh UUID on every fetch of the document.
    again = requests.get(f"{stack}/openapi.json", timeout=30).json()
    (first,) = [
        p["example"]
        for p in document["paths"]["/jobs"]["post"]["parameters"]
        if p["name"] == "Idempotency-Key"
    ]
    (second,) = [
        p["example"]
        for p in again["paths"]["/jobs"]["post"]["parameters"]
        if p["name"] == "Idempotency-Key"
    ]
    assert first != second
