"""Hostile bytes found from outside, each once a 500: a window end in the year 10000 in UTC,
JSON nested a thousand levels (Python's recursion limit), integers longer than Python converts
(4,300 digits). Each is now a 400 `VALIDATION_FAILED` naming the field, stores nothing, and
answers the same when the request is sent again with the same Idempotency-Key."""

import json
from typing import Any

import pytest

from dispatch.db import Connection
from dispatch.http.body import MAX_DEPTH
from tests.support import BUSINESS, Api, Reply, job_body, make_job, make_worker, worker

HUGE = "1" * 4301  # one digit more than Python turns into an int


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def deep_array(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def stored(conn: Connection) -> dict[str, int]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM job_events) AS events,"
        " (SELECT count(*) FROM idempotency_keys) AS keys"
    ).fetchone()
    assert row is not None
    return dict(row)


def refused_twice(api: Api, conn: Connection, method: str, path: str, who: Any, raw: str) -> Reply:
    """The request, then the same again under the same key: one 400 naming a field, the same
    answer both times (but the request id), and nothing stored."""
    before = stored(conn)
    first = api.call(method, path, who, raw=raw.encode(), key="hostile-1")
    again = api.call(method, path, who, raw=raw.encode(), key="hostile-1")
    for reply in (first, again):
        assert (reply.status, reply.code) == (400, "VALIDATION_FAILED"), reply.body
        assert reply.body["error"]["details"], reply.body
    assert first.body["error"]["details"] == again.body["error"]["details"]
    assert "Idempotent-Replayed" not in again.headers
    assert stored(conn) == before
    return first


def fields(reply: Reply) -> list[str]:
    return [detail["field"] for detail in reply.body["error"]["details"]]


@pytest.mark.parametrize(
    ("which", "moment"),
    [
        ("end", "9999-12-31T23:59:59-23:59"),  # the year 10000 in UTC
        ("end", "9999-12-31T23:59:59.999999-00:01"),
        ("start", "0001-01-01T00:00:00+00:01"),  # the year 0 in UTC
    ],
)
def test_a_window_time_beyond_rfc_3339_in_utc(
    api: Api, conn: Connection, which: str, moment: str
) -> None:
    body = job_body()
    body["window"][which] = moment
    reply = refused_twice(api, conn, "POST", "/jobs", BUSINESS, json.dumps(body))
    assert fields(reply) == [f"window.{which}"]


def test_the_last_moment_of_9999_is_a_window_end_like_any_other(api: Api) -> None:
    body = job_body()
    body["window"]["end"] = "9999-12-31T23:59:59Z"
    reply = api.call("POST", "/jobs", BUSINESS, body)
    assert reply.status == 201, reply.body
    assert reply.body["window"]["end"] == "9999-12-31T23:59:59Z"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (deep_object(1_000), "a"),
        (deep_array(8_000), "body"),
        ('{"location": ' + deep_array(1_000) + "}", "location"),
        ('{"skills": [], "window": ' + deep_object(MAX_DEPTH) + "}", "window"),
    ],
    ids=["object-1000", "array-8000", "in-location", "one-level-too-deep"],
)
def test_json_nested_too_deep_on_post_jobs(
    api: Api, conn: Connection, raw: str, field: str
) -> None:
    reply = refused_twice(api, conn, "POST", "/jobs", BUSINESS, raw)
    assert fields(reply) == [field]
    assert "nested" in reply.body["error"]["details"][0]["problem"]


def test_nesting_within_the_limit_is_judged_by_the_model(api: Api, conn: Connection) -> None:
    reply = refused_twice(api, conn, "POST", "/jobs", BUSINESS, deep_object(MAX_DEPTH))
    assert "a" in fields(reply)
    assert all("nested" not in d["problem"] for d in reply.body["error"]["details"])


def test_brackets_inside_strings_are_text(api: Api) -> None:
    body = job_body(skills=["[" * 40, "{" * 40, '\\"[' * 10])
    assert api.call("POST", "/jobs", BUSINESS, body).status == 201


@pytest.mark.parametrize(
    ("raw", "field"),
    [(deep_object(1_000), "a"), ('{"version": ' + deep_array(1_000) + "}", "version")],
    ids=["object-1000", "in-version"],
)
def test_json_nested_too_deep_on_accept(api: Api, conn: Connection, raw: str, field: str) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    reply = refused_twice(api, conn, "POST", f"/jobs/{job['id']}/accept", worker(1), raw)
    assert fields(reply) == [field]
    assert conn.execute("SELECT status, version FROM jobs").fetchone() == {
        "status": "open",
        "version": 1,
    }


@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_too_long_for_python_in_a_version(api: Api, conn: Connection, sign: str) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    accept = refused_twice(
        api, conn, "POST", f"/jobs/{job['id']}/accept", worker(1), f'{{"version": {sign}{HUGE}}}'
    )
    assert fields(accept) == ["version"]
    held = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).body
    moved = refused_twice(
        api,
        conn,
        "POST",
        f"/jobs/{held['id']}/transitions",
        worker(1),
        f'{{"event": "check_in", "version": {sign}{HUGE}}}',
    )
    assert fields(moved) == ["version"]


@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_too_long_for_python_in_a_latitude(
    api: Api, conn: Connection, sign: str
) -> None:
    raw = json.dumps(job_body()).replace('"lat": 12.9716', f'"lat": {sign}{HUGE}')
    assert HUGE in raw
    reply = refused_twice(api, conn, "POST", "/jobs", BUSINESS, raw)
    assert fields(reply) == ["location.lat"]
    position = api.call(
        "PUT", "/workers/me/location", worker(1), raw=f'{{"lat": {sign}{HUGE}, "lng": 1}}'.encode()
    )
    assert (position.status, position.code) == (400, "VALIDATION_FAILED"), position.body
    assert fields(position) == ["lat"]


def test_a_body_that_is_not_json_names_the_body(api: Api) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, raw=b'{"location": }')
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    (detail,) = reply.body["error"]["details"]
    assert detail["field"] == "body"
    assert "JSON" in detail["problem"]


# -- input the contract decided late: keys given twice, skills that look alike -------------


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"skills": ["wash"], "skills": ["paint"]}', "skills"),
        ('{"location": {"lat": 1, "lat": 2, "lng": 3}}', "lat"),
    ],
    ids=["top-level", "nested"],
)
def test_a_key_given_twice_is_refused_naming_it(
    api: Api, conn: Connection, raw: str, field: str
) -> None:
    reply = refused_twice(api, conn, "POST", "/jobs", BUSINESS, raw)
    assert reply.body["error"]["details"] == [
        {"field": field, "problem": "is given more than once in one object"}
    ]


def test_a_key_given_twice_on_accept_moves_nothing(api: Api, conn: Connection) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    raw = '{"version": 1, "version": 1}'
    reply = refused_twice(api, conn, "POST", f"/jobs/{job['id']}/accept", worker(1), raw)
    assert fields(reply) == ["version"]
    assert conn.execute("SELECT status FROM jobs").fetchone() == {"status": "open"}


def test_a_skill_in_nfd_is_the_same_skill_as_in_nfc(api: Api) -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    profile = api.call("PUT", "/workers/me", worker(1), {"skills": [decomposed]})
    assert profile.body["skills"] == [composed], profile.body
    job = make_job(api, skills=[composed, decomposed])
    assert job["skills"] == [composed]  # one skill, given twice
    taken = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    assert taken.status == 200, taken.body


@pytest.mark.parametrize(
    "char",
    ["\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\u2028", "\u2029", "\x07", "\x85"],
    ids=["zwsp", "zwj", "rlo", "lri", "bom", "line-sep", "para-sep", "bell", "nel"],
)
def test_a_skill_with_a_character_no_one_sees_is_refused(
    api: Api, conn: Connection, char: str
) -> None:
    raw = json.dumps(job_body(skills=[f"wa{char}sh"]))
    reply = refused_twice(api, conn, "POST", "/jobs", BUSINESS, raw)
    assert fields(reply) == ["skills.0"]
    assert f"U+{ord(char):04X}" in reply.body["error"]["details"][0]["problem"]
    profile = api.call("PUT", "/workers/me", worker(1), {"skills": [f"wa{char}sh"]})
    assert (profile.status, profile.code) == (400, "VALIDATION_FAILED"), profile.body
