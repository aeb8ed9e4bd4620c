"""The hostile bytes of tests/integration/test_hostile_input.py, sent over real HTTP through the
local gateway: each a 400 `VALIDATION_FAILED` naming the field, the same answer when sent
again with the same Idempotency-Key, and nothing stored."""

import json
from typing import Any

import pytest

from dispatch.db import Connection
from tests.e2e.client import Client
from tests.support import job_body

HUGE = "1" * 4301


def stored(conn: Connection) -> dict[str, Any]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM job_events) AS events,"
        " (SELECT count(*) FROM idempotency_keys) AS keys"
    ).fetchone()
    assert row is not None
    return dict(row)


def send_raw(client: Client, method: str, path: str, raw: str, key: str) -> Any:
    return client.session.request(
        method,
        client.base + path,
        data=raw.encode(),
        headers={"Idempotency-Key": key, "Content-Type": "application/json"},
        timeout=30,
    )


@pytest.fixture
def open_job(stack: str, conn: Connection) -> dict[str, Any]:
    worker = Client(stack, "hostile-worker", "worker")
    assert worker.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
    reply = Client(stack, "hostile-biz", "business").send("POST", "/jobs", job_body(["wash"]))
    assert reply.status_code == 201, reply.text
    job: dict[str, Any] = reply.json()
    return job


def window_in_the_year_10000() -> str:
    body = job_body(["wash"])
    body["window"]["end"] = "9999-12-31T23:59:59-23:59"
    return json.dumps(body)


CASES = [
    ("business", "POST", "/jobs", window_in_the_year_10000(), "window.end"),
    ("business", "POST", "/jobs", '{"a":' * 1000 + "1" + "}" * 1000, "a"),
    (
        "business",
        "POST",
        "/jobs",
        json.dumps(job_body(["wash"])).replace('"lat": 12.9716', f'"lat": {HUGE}'),
        "location.lat",
    ),
    ("worker", "POST", "/jobs/{job}/accept", '{"a":' * 1000 + "1" + "}" * 1000, "a"),
    ("worker", "POST", "/jobs/{job}/accept", f'{{"version": {HUGE}}}', "version"),
]


@pytest.mark.parametrize(
    ("role", "method", "path", "raw", "field"),
    CASES,
    ids=["window-year-10000", "deep-jobs", "huge-lat", "deep-accept", "huge-version"],
)
def test_hostile_bodies_over_http(
    stack: str,
    conn: Connection,
    open_job: dict[str, Any],
    role: str,
    method: str,
    path: str,
    raw: str,
    field: str,
) -> None:
    client = Client(stack, f"hostile-{role}", role)
    before = stored(conn)
    key = f"hostile-{field}-{role}"
    replies = [send_raw(client, method, path.format(job=open_job["id"]), raw, key) for _ in "12"]
    for reply in replies:
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["code"] == "VALIDATION_FAILED"
        assert [d["field"] for d in error["details"]] == [field]
    assert replies[0].json()["error"]["details"] == replies[1].json()["error"]["details"]
    assert stored(conn) == before
