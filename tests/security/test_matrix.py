"""Who may do what: every route by every kind of caller, against a job that is assigned.

The callers: the business that owns the job, another business, the worker holding it, another
worker, and ops. Each cell is a fresh job, so a change in one cell cannot shape another. The
table is the exact answer expected; the allowed set of each route (the 2xx cells) follows.
"""

import uuid
from typing import Any

import pytest
import redis

from dispatch.errors import CATALOGUE, Code
from tests.support import BUSINESS, OPS, Api, Reply, make_job, make_worker, upload_photo, worker

OWNER, OTHER_BUSINESS = BUSINESS, ("business-2", "business")
ASSIGNEE, OTHER_WORKER = worker(1), worker(2)
CALLERS = {
    "owner": OWNER,
    "other-business": OTHER_BUSINESS,
    "assignee": ASSIGNEE,
    "other-worker": OTHER_WORKER,
    "ops": OPS,
}


def transition(event: str) -> tuple[str, str, Any]:
    return ("POST", "/jobs/{job}/transitions", {"event": event, "version": "{version}"})


ROUTES: dict[str, tuple[str, str, Any]] = {
    "create": ("POST", "/jobs", "job"),
    "read": ("GET", "/jobs/{job}", None),
    "events": ("GET", "/jobs/{job}/events", None),
    "nearby": ("GET", "/jobs/nearby?lat=12.9716&lng=77.5946", None),
    "accept": ("POST", "/jobs/{job}/accept", {}),
    "check_in": transition("check_in"),
    "release": transition("release"),
    "start": transition("start"),
    "cancel": transition("cancel"),
    "new photo": ("POST", "/photos", {"content_type": "image/jpeg"}),
    "attach before": ("PUT", "/jobs/{job}/photos/before", {"photo_id": "{photo}"}),
    "profile": ("PUT", "/workers/me", {"skills": ["wash"]}),
    "location": ("PUT", "/workers/me/location", {"lat": 12.97, "lng": 77.59}),
    "offers": ("GET", "/workers/me/offers", None),
    "decline": ("POST", "/jobs/{job}/decline", {}),
    "rating": ("POST", "/jobs/{job}/rating", {"stars": 5}),
    "ops jobs": ("GET", "/ops/jobs?bbox=77.5,12.9,77.7,13.1", None),
    "ops workers": ("GET", "/ops/workers?bbox=77.5,12.9,77.7,13.1", None),
    "ops events": ("GET", "/ops/events", None),
    "ops summary": ("GET", "/ops/summary", None),
    "health": ("GET", "/health", None),
}

F, N = "FORBIDDEN", "NOT_FOUND"
#                  owner        other-business  assignee                other-worker       ops
EXPECTED: dict[str, tuple[Any, Any, Any, Any, Any]] = {
    "create":        (201,        201,            F,                      F,                 F),
    "read":          (200,        N,              200,                    N,                 200),
    "events":        (200,        N,              200,                    N,                 200),
    "nearby":        (F,          F,              200,                    200,               F),
    "accept":        (F,          F,              "WORKER_BUSY",          "JOB_TAKEN",       F),
    "check_in":      (F,          F,              200,                    N,                 F),
    "release":       (F,          F,              200,                    N,                 F),
    "start":         (F,          F,              "BEFORE_PHOTO_REQUIRED", N,                F),
    "cancel":        (200,        N,              F,                      F,                 F),
    "new photo":     (F,          F,              201,                    201,               F),
    "attach before": (F,          F,              200,                    N,                 F),
    "profile":       (F,          F,              200,                    200,               F),
    "location":      (F,          F,              204,                    204,               F),
    "offers":        (F,          F,              200,                    200,               F),
    "decline":       (F,          F,              200,                    200,               F),
    "rating":        ("ILLEGAL_TRANSITION", N,    F,                      F,                 F),
    "ops jobs":      (F,          F,              F,                      F,                 200),
    "ops workers":   (F,          F,              F,                      F,                 200),
    "ops events":    (F,          F,              F,                      F,                 200),
    "ops summary":   (F,          F,              F,                      F,                 200),
    "health":        (200,        200,            200,                    200,               200),
}  # fmt: skip


def fill(value: Any, job: dict[str, Any], photo: str) -> Any:
    if isinstance(value, dict):
        return {k: fill(v, job, photo) for k, v in value.items()}
    if value == "{version}":
        return job["version"]
    if value == "{photo}":
        return photo
    return value


def call(api: Api, route: str, who: tuple[str, str], job: dict[str, Any], photo: str) -> Reply:
    from tests.support import job_body

    method, path, body = ROUTES[route]
    body = job_body() if body == "job" else fill(body, job, photo)
    return api.call(method, path.format(job=job["id"]), who, body)


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("route", list(ROUTES))
def test_every_route_by_every_caller(api: Api, cache: redis.Redis, route: str, caller: str) -> None:
    job = make_job(api, OWNER)
    make_worker(api, ASSIGNEE)
    make_worker(api, OTHER_WORKER)
    job = api.call("POST", f"/jobs/{job['id']}/accept", ASSIGNEE, {}).body
    who = CALLERS[caller]
    # A photo of the caller's own where a worker attaches; anyone else's id is refused first.
    photo = upload_photo(api, who) if route == "attach before" and who[1] == "worker" else ""
    photo = photo or str(uuid.uuid4())

    reply = call(api, route, who, job, photo)

    expected = EXPECTED[route][list(CALLERS).index(caller)]
    if isinstance(expected, int):
        assert reply.status == expected, reply.body
    else:
        assert reply.code == expected, (reply.status, reply.body)
        assert reply.status == CATALOGUE[Code(expected)].status
    if reply.status >= 400:
        assert reply.body["error"]["message"] == CATALOGUE[Code(reply.code)].message


def test_the_allowed_sets_read_off_the_table() -> None:
    """The table, read per route, is the contract's 'who' column."""
    allowed = {
        route: {c for c, e in zip(CALLERS, row, strict=True) if isinstance(e, int)}
        for route, row in EXPECTED.items()
    }
    assert allowed["create"] == {"owner", "other-business"}
    assert allowed["read"] == allowed["events"] == {"owner", "assignee", "ops"}
    assert allowed["cancel"] == {"owner"}
    assert allowed["check_in"] == allowed["release"] == allowed["attach before"] == {"assignee"}
    assert allowed["health"] == set(CALLERS)
