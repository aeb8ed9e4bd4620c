"""Hand-written nasty inputs on every route that takes input: deep JSON, huge arrays and
numbers, NUL bytes and lone surrogates, right-to-left and zero-width text, SQL in every string
field, hostile headers and query strings. Each answer is a 2xx or a 4xx in the contract's
shape (never a 5xx), and a refused request writes nothing."""

import json
from typing import Any

import pytest

from dispatch.db import Connection
from dispatch.errors import CATALOGUE, Code
from tests.support import BUSINESS, OPS, Api, Reply, job_body, make_job, make_worker, worker

SQL = "'; DROP TABLE jobs; --"
TEXTS = [
    SQL,
    "wash\u0000",  # NUL: Postgres text cannot hold it
    "\ud800",  # a lone surrogate: not encodable as UTF-8
    "\u202eraw\u202c",  # right-to-left override
    "wa\u200bsh",  # zero-width space
    "🧽🪣",
    "\uff57\uff41\uff53\uff48",  # full-width "wash"
    "x" * 10_000,
]


def deep(levels: int) -> bytes:
    """JSON nested `levels` deep, written out (Python's own encoder would recurse)."""
    return b'{"a":' * levels + b"1" + b"}" * levels


def raw_json(value: Any) -> bytes:
    """JSON as a client might send it: surrogates and NUL escaped, never repaired."""
    return json.dumps(value, ensure_ascii=True).encode()


def assert_clean(reply: Reply) -> None:
    assert reply.status < 500, (reply.status, reply.body)
    if reply.status >= 400:
        assert set(reply.body) == {"error"}, reply.body
        code = Code(reply.body["error"]["code"])
        assert reply.body["error"]["message"] == CATALOGUE[code].message


def counts(conn: Connection) -> tuple[int, int, int]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM job_events) AS events,"
        " (SELECT count(*) FROM workers) AS workers"
    ).fetchone()
    assert row is not None
    return row["jobs"], row["events"], row["workers"]


BODIES: list[tuple[str, str, Any]] = [
    # route, who, body (a value, or bytes sent as they are)
    *[("POST /jobs", "business", {**job_body(), "skills": [text]}) for text in TEXTS],
    *[("PUT /workers/me", "worker", {"skills": [text]}) for text in TEXTS],
    *[("POST /photos", "worker", {"content_type": text}) for text in TEXTS],
    *[("POST /jobs/{job}/transitions", "holder", {"event": text, "version": 2}) for text in TEXTS],
    *[("PUT /jobs/{job}/photos/before", "holder", {"photo_id": text}) for text in TEXTS],
    *[("POST /jobs/{job}/applications", "worker", {"note": text}) for text in TEXTS],
    *[("POST /jobs/{job}/assign", "business", {"worker_id": t, "version": 2}) for t in TEXTS],
    *[("POST /jobs", "business", {**job_body(), "assignment": text}) for text in TEXTS],
    (
        "POST /jobs",
        "business",
        {**job_body(), "assignment": "business_choice", "choose_within_s": 10**400},
    ),
    (
        "POST /jobs",
        "business",
        {
            **job_body(),
            "assignment": "business_choice",
            "choose_within_s": 2**63,
            "auto_pick": True,
        },
    ),
    (
        "POST /jobs",
        "business",
        {**job_body(), "assignment": "business_choice", "auto_pick": "true", "choose_within_s": 60},
    ),
    ("POST /jobs/{job}/applications", "worker", deep(10_000)),
    ("POST /jobs/{job}/applications", "worker", {"note": ["a"] * 100_000}),
    ("POST /jobs/{job}/assign", "business", {"worker_id": "worker-1", "version": 2**70}),
    ("POST /jobs/{job}/assign", "business", {"worker_id": {"$ne": 1}, "version": 2}),
    ("POST /jobs/{job}/assign", "business", {"worker_id": "worker-1"}),
    ("POST /jobs", "business", deep(10_000)),
    ("POST /jobs", "business", {**job_body(), "skills": ["w"] * 100_000}),
    ("POST /jobs", "business", {**job_body(), "location": {"lat": 1e308 * 10, "lng": 0}}),
    ("POST /jobs", "business", {**job_body(), "location": {"lat": -0.0, "lng": 10**400}}),
    ("POST /jobs/{job}/accept", "worker", {"version": 2**70}),
    ("POST /jobs/{job}/accept", "worker", {"version": -1}),
    ("POST /jobs/{job}/accept", "worker", {"version": True}),
    ("POST /jobs/{job}/transitions", "holder", {"event": "check_in", "version": 2**63}),
    ("PUT /workers/me/location", "worker", {"lat": 1e-320, "lng": -1e-320}),
    ("PUT /workers/me/location", "worker", {"lat": [1], "lng": {"a": 1}}),
]


@pytest.mark.parametrize(("route", "role", "body"), BODIES, ids=lambda v: str(v)[:40])
def test_nasty_bodies_are_refused_cleanly(
    api: Api, conn: Connection, route: str, role: str, body: Any
) -> None:
    make_worker(api, worker(1))
    job = make_job(api)
    job = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).body
    before = counts(conn)
    who = {"business": BUSINESS, "worker": worker(2), "holder": worker(1)}[role]
    method, path = route.split(" ", 1)
    raw = body if isinstance(body, bytes) else raw_json(body)
    reply = api.call(method, path.format(job=job["id"]), who, raw=raw)
    assert_clean(reply)
    if reply.status >= 400:
        assert counts(conn) == before


@pytest.mark.parametrize(
    "query",
    [
        "lat=NaN&lng=0",
        "lat=inf&lng=0",
        "lat=1e999&lng=0",
        f"lat=1&lng=2&radius_m={SQL}",
        "lat=1&lng=2&limit=99999999999999999999",
        "lat=1&lat=2&lng=3",
        "lat=%00&lng=1",
        "lat=1&lng=2&radius_m=-5",
        "",
    ],
)
def test_nasty_queries_are_refused_cleanly(api: Api, query: str) -> None:
    reply = api.call("GET", f"/jobs/nearby?{query}", worker(1))
    assert_clean(reply)


@pytest.mark.parametrize(
    "job_id",
    [SQL, "%00", "..%2F..%2Fetc%2Fpasswd", "0" * 5000, "00000000-0000-0000-0000-00000000000g"],
)
def test_nasty_path_ids_are_refused_cleanly(api: Api, job_id: str) -> None:
    for path in (f"/jobs/{job_id}", f"/jobs/{job_id}/events"):
        assert_clean(api.call("GET", path, OPS))
    assert_clean(api.call("POST", f"/jobs/{job_id}/accept", worker(1), {}))


@pytest.mark.parametrize("key", [SQL, "k" * 256, "ключ", "a\u0000b", " ", "a\tb"])
def test_nasty_idempotency_keys_are_refused_cleanly(api: Api, conn: Connection, key: str) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, job_body(), key=key)
    assert_clean(reply)
    if reply.status >= 400:
        assert counts(conn) == (0, 0, 0)
