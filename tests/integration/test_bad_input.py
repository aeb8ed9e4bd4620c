"""Bad input gets a clear 4xx in the contract's error body, never a 500, and changes nothing."""

import base64
import json
from typing import Any

import pytest

from dispatch.db import Connection
from tests.support import BUSINESS, Api, job_body, make_job, make_worker, worker


def assert_contract_error(reply: Any, status: int, code: str) -> None:
    assert (reply.status, reply.code) == (status, code), reply.body
    error = reply.body["error"]
    assert set(error) <= {"code", "message", "request_id", "details"}
    assert error["message"]
    assert error["request_id"]


def nothing_written(conn: Connection) -> None:
    for table in ("jobs", "job_events", "idempotency_keys"):
        row = conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()
        assert row == {"n": 0}, table


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"not json",
        b"[]",
        b"null",
        b'"a string"',
        b"42",
        b'{"location": }',
        b"\xff\xfe",
    ],
)
def test_malformed_json(api: Api, conn: Connection, raw: bytes) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, raw=raw)
    assert_contract_error(reply, 400, "VALIDATION_FAILED")
    nothing_written(conn)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"location": {"lat": "12.9", "lng": 77.5}}, "location.lat"),
        ({"location": {"lat": 12.9}}, "location.lng"),
        ({"location": {"lat": 91, "lng": 0}}, "location.lat"),
        ({"location": {"lat": 0, "lng": 180.01}}, "location.lng"),
        ({"location": [12.9, 77.5]}, "location"),
        ({"skills": "wash"}, "skills"),
        ({"skills": [1]}, "skills.0"),
        ({"skills": ["x" * 65]}, "skills.0"),
        ({"window": {"start": "tomorrow", "end": "later"}}, "window.start"),
        ({"window": {"start": "2030-01-02T00:00:00Z", "end": "2030-01-01T00:00:00Z"}}, "window"),
        ({"extra": True}, "extra"),
    ],
)
def test_wrong_types_ranges_and_unknown_fields(
    api: Api, conn: Connection, change: dict[str, Any], field: str
) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, {**job_body(), **change})
    assert_contract_error(reply, 400, "VALIDATION_FAILED")
    assert any(d["field"].startswith(field) for d in reply.body["error"]["details"]), reply.body
    nothing_written(conn)


def test_missing_body(api: Api, conn: Connection) -> None:
    assert_contract_error(api.call("POST", "/jobs", BUSINESS), 400, "VALIDATION_FAILED")
    nothing_written(conn)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity(api: Api, conn: Connection, literal: str) -> None:
    raw = json.dumps(job_body()).replace('"lat": 12.9716', f'"lat": {literal}')
    assert literal in raw
    assert_contract_error(
        api.call("POST", "/jobs", BUSINESS, raw=raw.encode()), 400, "VALIDATION_FAILED"
    )
    nothing_written(conn)


def test_oversized_body(api: Api, conn: Connection) -> None:
    body = {**job_body(), "skills": ["wash"], "padding": "x" * 20_000}
    reply = api.call("POST", "/jobs", BUSINESS, body)
    assert_contract_error(reply, 413, "PAYLOAD_TOO_LARGE")
    nothing_written(conn)


def test_base64_encoded_body_is_read(api: Api) -> None:
    raw = base64.b64encode(json.dumps(job_body()).encode())
    # API Gateway base64-encodes bodies it considers binary; the handler must decode them.
    from dispatch_local.events import LambdaContext, http_api_event
    from dispatch_local.template import find, handler_of
    from tests.support import api_claims

    found = find(api.routes, "POST", "/jobs")
    assert found is not None
    route, params = found
    event = http_api_event(
        route, params, "POST", "/jobs", "", [("idempotency-key", "b64")], b"", api_claims(*BUSINESS)
    )
    event["body"], event["isBase64Encoded"] = raw.decode(), True
    result = handler_of(route)(event, LambdaContext(function_name=route.function))
    assert result["statusCode"] == 201, result


@pytest.mark.parametrize("job_id", ["not-a-uuid", "1", "'; DROP TABLE jobs; --"])
def test_path_that_does_not_parse(api: Api, job_id: str) -> None:
    make_worker(api, worker(1))
    reply = api.call("POST", f"/jobs/{job_id}/accept", worker(1), {})
    assert_contract_error(reply, 400, "VALIDATION_FAILED")
    assert_contract_error(api.call("GET", f"/jobs/{job_id}", BUSINESS), 400, "VALIDATION_FAILED")


@pytest.mark.parametrize(
    "body", [{"version": "2"}, {"version": 0}, {"version": 1.5}, {"version": None, "x": 1}, [1]]
)
def test_bad_accept_bodies(api: Api, conn: Connection, body: Any) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), body)
    assert_contract_error(reply, 400, "VALIDATION_FAILED")
    row = conn.execute("SELECT status, version FROM jobs").fetchone()
    assert row == {"status": "open", "version": 1}


@pytest.mark.parametrize("body", [{}, {"skills": "wash"}, {"skills": ["ok"], "rating": 5}])
def test_bad_worker_profiles(api: Api, body: Any) -> None:
    reply = api.call("PUT", "/workers/me", worker(1), body)
    assert_contract_error(reply, 400, "VALIDATION_FAILED")


def test_sql_in_strings_is_just_text(api: Api, conn: Connection) -> None:
    evil = "wash'); DELETE FROM jobs; --"
    make_worker(api, worker(1), [evil])
    job = make_job(api, skills=[evil])
    assert job["skills"] == [evil]
    assert api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).status == 200


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data", ""]
)
def test_a_body_is_json_whatever_its_content_type_says(
    api: Api, conn: Connection, content_type: str
) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, job_body(), headers={"content-type": content_type})
    assert reply.status == 201, reply.body
    broken = api.call(
        "POST", "/jobs", BUSINESS, raw=b"a=1&b=2", headers={"content-type": content_type}
    )
    assert_contract_error(broken, 400, "VALIDATION_FAILED")
