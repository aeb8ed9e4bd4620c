"""Every status the OpenAPI document lists for a route is one the route really gives: each
(route, status) pair of the document has a scenario here that produces it, faults included
(a table renamed away for 500, Postgres or Redis cut off for 503, a key held by a twin for
409 REQUEST_IN_PROGRESS). A status documented without a scenario fails the test, and so does
a scenario that produces anything else. Together with the fuzzer (tests/e2e/test_fuzz.py: no
status outside the document), the document is exactly what the API answers."""

import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pytest
import redis

from dispatch import db
from dispatch.errors import RETRY_AFTER_S
from dispatch_local.gateway import openapi_document
from dispatch_local.template import routes
from tests.faults.proxy import Proxy
from tests.support import (
    BUSINESS,
    OPS,
    Api,
    Reply,
    Who,
    job_body,
    make_job,
    make_worker,
    upload_photo,
    walk_to,
    worker,
)

HOLDER, OTHER, FINISHER = worker(1), worker(2), worker(3)


def documented() -> list[tuple[str, int]]:
    document = openapi_document(routes())
    return [
        (f"{method.upper()} {path}", int(status))
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for status, answer in operation["responses"].items()
        # API Gateway's own answers (a throttle's 429) never reach a function: no local stack
        # or handler gives them, the template's RouteSettings do.
        if answer.get("x-answered-by") != "api-gateway"
    ]


@dataclass
class World:
    """An open job, a job held by HOLDER, and the faults a scenario may switch on."""

    api: Api
    conn: db.Connection
    database_url: str
    postgres: Proxy
    redis: Proxy
    open_job: dict[str, Any]
    held_job: dict[str, Any]

    @cached_property
    def done_job(self) -> dict[str, Any]:
        """A job completed by FINISHER, ready to be rated (walked only where needed)."""
        return walk_to(self.api, "completed", holder=FINISHER)

    @cached_property
    def choice_job(self) -> dict[str, Any]:
        """A job the business chooses for, with OTHER applied."""
        body = {**job_body(), "assignment": "business_choice"}
        job: dict[str, Any] = self.api.call("POST", "/jobs", BUSINESS, body).body
        applied = self.api.call("POST", f"/jobs/{job['id']}/applications", OTHER, {})
        assert applied.status == 201, applied.body
        return job

    def held_choice_job(self) -> dict[str, Any]:
        """A choice job OTHER was assigned."""
        job = self.choice_job
        assigned: dict[str, Any] = self.api.call(
            "POST", f"/jobs/{job['id']}/assign", BUSINESS, {"worker_id": OTHER[0], "version": 1}
        ).body
        return assigned


@pytest.fixture
def world(
    api: Api,
    conn: db.Connection,
    database_url: str,
    cache: redis.Redis,
    postgres_proxy: Proxy,
    redis_proxy: Proxy,
) -> World:
    make_worker(api, HOLDER)
    make_worker(api, OTHER)
    held = make_job(api)
    held = api.call("POST", f"/jobs/{held['id']}/accept", HOLDER, {}).body
    return World(api, conn, database_url, postgres_proxy, redis_proxy, make_job(api), held)


# -- what each route looks like when it succeeds: the caller, the path, the body -----------

Request = tuple[Who | None, str, Any]


def happy(w: World, route: str) -> Request:
    open_id, held = w.open_job["id"], w.held_job
    return {
        "GET /health": (None, "/health", None),
        "POST /jobs": (BUSINESS, "/jobs", job_body()),
        "GET /jobs/{job_id}": (OPS, f"/jobs/{open_id}", None),
        "GET /jobs/{job_id}/events": (OPS, f"/jobs/{open_id}/events", None),
        "GET /jobs/nearby": (OTHER, "/jobs/nearby?lat=12.9716&lng=77.5946", None),
        "POST /jobs/{job_id}/accept": (OTHER, f"/jobs/{open_id}/accept", {}),
        "POST /jobs/{job_id}/transitions": (
            HOLDER,
            f"/jobs/{held['id']}/transitions",
            {"event": "check_in", "version": held["version"]},
        ),
        "PUT /jobs/{job_id}/photos/{slot}": (
            HOLDER,
            f"/jobs/{held['id']}/photos/before",
            {"photo_id": "{photo}"},
        ),
        "POST /photos": (HOLDER, "/photos", {"content_type": "image/jpeg"}),
        "PUT /workers/me": (HOLDER, "/workers/me", {"skills": ["wash"]}),
        "PUT /workers/me/location": (HOLDER, "/workers/me/location", {"lat": 1.0, "lng": 2.0}),
        "GET /workers/me/offers": (OTHER, "/workers/me/offers", None),
        "POST /jobs/{job_id}/decline": (OTHER, f"/jobs/{open_id}/decline", {}),
        "POST /jobs/{job_id}/rating": (BUSINESS, f"/jobs/{w.done_job['id']}/rating", {"stars": 5}),
        "GET /ops/jobs": (OPS, "/ops/jobs?bbox=77.5,12.9,77.7,13.1", None),
        "GET /ops/workers": (OPS, "/ops/workers?bbox=77.5,12.9,77.7,13.1", None),
        "GET /ops/events": (OPS, "/ops/events", None),
        "GET /ops/summary": (OPS, "/ops/summary", None),
        **choosing(w, route),
        "PUT /businesses/me/favourites/{worker_id}": (BUSINESS, f"{FAVOURITES}/worker-9", None),
        "DELETE /businesses/me/favourites/{worker_id}": (BUSINESS, f"{FAVOURITES}/worker-9", None),
        "GET /businesses/me/favourites": (BUSINESS, FAVOURITES, None),
        "PUT /businesses/me/blocked/{worker_id}": (BUSINESS, f"{BLOCKED}/worker-9", None),
        "DELETE /businesses/me/blocked/{worker_id}": (BUSINESS, f"{BLOCKED}/worker-9", None),
        "GET /businesses/me/blocked": (BUSINESS, BLOCKED, None),
    }[route]


FAVOURITES, BLOCKED = "/businesses/me/favourites", "/businesses/me/blocked"


def choosing(w: World, route: str) -> dict[str, Request]:
    """The business's choice routes (their job is made only when one of them is asked for)."""
    if "applications" not in route and "assign" not in route:
        return {}
    chosen = w.choice_job["id"]
    return {
        "POST /jobs/{job_id}/applications": (OTHER, f"/jobs/{chosen}/applications", {}),
        "DELETE /jobs/{job_id}/applications/me": (
            OTHER,
            f"/jobs/{chosen}/applications/me",
            None,
        ),
        "GET /jobs/{job_id}/applications": (BUSINESS, f"/jobs/{chosen}/applications", None),
        "POST /jobs/{job_id}/assign": (
            BUSINESS,
            f"/jobs/{chosen}/assign",
            {"worker_id": OTHER[0], "version": 1},
        ),
    }


def prepared(w: World, request: Request) -> Request:
    """The request with its photo uploaded (done before any fault is switched on)."""
    who, path, body = request
    if body == {"photo_id": "{photo}"}:
        body = {"photo_id": upload_photo(w.api, HOLDER)}
    return who, path, body


def send(w: World, route: str, request: Request, **kwargs: Any) -> Reply:
    who, path, body = prepared(w, request)
    method = route.split(" ", 1)[0]
    return w.api.call(method, path, who, body, **kwargs)


# -- one way to get each status --------------------------------------------------------


def success(w: World, route: str) -> Reply:
    return send(w, route, happy(w, route))


INVALID = {
    "GET /jobs/{job_id}": "/jobs/not-a-uuid",
    "GET /jobs/{job_id}/events": "/jobs/not-a-uuid/events",
    "GET /jobs/nearby": "/jobs/nearby?lat=95&lng=0",
    "GET /workers/me/offers": "/workers/me/offers?lat=12.97",  # lat and lng come together
    "GET /ops/jobs": "/ops/jobs?bbox=77.7,12.9,77.5,13.1",
    "GET /ops/workers": "/ops/workers?bbox=1,2,3",
    "GET /ops/events": "/ops/events?after=not-ours",
    "DELETE /jobs/{job_id}/applications/me": "/jobs/not-a-uuid/applications/me",
    "GET /jobs/{job_id}/applications": "/jobs/not-a-uuid/applications",
    "PUT /businesses/me/favourites/{worker_id}": f"{FAVOURITES}/{'x' * 129}",
    "DELETE /businesses/me/favourites/{worker_id}": f"{FAVOURITES}/{'x' * 129}",
    "PUT /businesses/me/blocked/{worker_id}": f"{BLOCKED}/{'x' * 129}",
    "DELETE /businesses/me/blocked/{worker_id}": f"{BLOCKED}/{'x' * 129}",
}
INVALID_BODY = {
    "POST /jobs": {"skills": ["wash"]},
    "POST /jobs/{job_id}/accept": {"version": "two"},
    "POST /jobs/{job_id}/transitions": {"event": "fly", "version": 2},
    "PUT /jobs/{job_id}/photos/{slot}": {"photo_id": "not-a-uuid"},
    "POST /photos": {"content_type": "text/plain"},
    "PUT /workers/me": {"skills": "wash"},
    "PUT /workers/me/location": {"lat": 95, "lng": 0},
    "POST /jobs/{job_id}/decline": {"because": "too far"},
    "POST /jobs/{job_id}/rating": {"stars": 6},
    "POST /jobs/{job_id}/applications": {"note": 5},
    "POST /jobs/{job_id}/assign": {"worker_id": "worker-2"},
}


def bad_request(w: World, route: str) -> Reply:
    who, path, body = happy(w, route)
    if route in INVALID:
        return send(w, route, (who, INVALID[route], body))
    return send(w, route, (who, path, INVALID_BODY[route]))


def unauthorized(w: World, route: str) -> Reply:
    _, path, body = happy(w, route)
    return send(w, route, (None, path, body))


def forbidden(w: World, route: str) -> Reply:
    who, path, body = happy(w, route)
    other_role = ("someone", "admin") if who == OPS else (BUSINESS if who != BUSINESS else OTHER)
    return send(w, route, (other_role, path, body))


def not_found(w: World, route: str) -> Reply:
    who, path, body = happy(w, route)
    nowhere = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", str(uuid.uuid4()), path, count=1)
    return send(w, route, (who, nowhere, body))


CONFLICT: dict[str, Callable[[World], Reply]] = {
    "POST /jobs/{job_id}/accept": lambda w: w.api.call(
        "POST", f"/jobs/{w.held_job['id']}/accept", OTHER, {}
    ),  # JOB_TAKEN
    "POST /jobs/{job_id}/transitions": lambda w: w.api.call(
        "POST",
        f"/jobs/{w.held_job['id']}/transitions",
        HOLDER,
        {"event": "start", "version": w.held_job["version"]},
    ),  # BEFORE_PHOTO_REQUIRED
    "PUT /jobs/{job_id}/photos/{slot}": lambda w: w.api.call(
        "PUT",
        f"/jobs/{w.held_job['id']}/photos/after",
        HOLDER,
        {"photo_id": upload_photo(w.api, HOLDER)},
    ),  # PHOTO_SLOT_CLOSED
    "POST /jobs/{job_id}/rating": lambda w: w.api.call(
        "POST", f"/jobs/{w.open_job['id']}/rating", BUSINESS, {"stars": 4}
    ),  # ILLEGAL_TRANSITION: only completed work is rated
    "POST /jobs/{job_id}/applications": lambda w: w.api.call(
        "POST", f"/jobs/{w.open_job['id']}/applications", OTHER, {}
    ),  # JOB_IS_FIRST_COME
    "DELETE /jobs/{job_id}/applications/me": lambda w: w.api.call(
        "DELETE", f"/jobs/{w.held_choice_job()['id']}/applications/me", OTHER
    ),  # ILLEGAL_TRANSITION: the holder releases instead
    "POST /jobs/{job_id}/assign": lambda w: w.api.call(
        "POST", f"/jobs/{w.open_job['id']}/assign", BUSINESS, {"worker_id": "x", "version": 1}
    ),  # JOB_IS_FIRST_COME
    "PUT /businesses/me/favourites/{worker_id}": lambda w: (
        w.api.call("PUT", f"{BLOCKED}/worker-8", BUSINESS),
        w.api.call("PUT", f"{FAVOURITES}/worker-8", BUSINESS),
    )[1],  # WORKER_BLOCKED
}


def conflict(w: World, route: str) -> Reply:
    if route in CONFLICT:
        return CONFLICT[route](w)
    return in_progress(w, route)


def in_progress(w: World, route: str) -> Reply:
    """A twin request holds the same key, uncommitted, longer than the lock timeout."""
    who, path, body = happy(w, route)
    assert who is not None
    release = threading.Event()
    claimed = threading.Event()

    def twin() -> None:
        with db.connect(w.database_url) as conn, conn.transaction():
            conn.execute(
                "INSERT INTO idempotency_keys (principal, key, fingerprint)"
                " VALUES (%s, 'twin-key', 'twin')",
                (who[0],),
            )
            claimed.set()
            release.wait()

    holder = threading.Thread(target=twin)
    holder.start()
    claimed.wait()
    try:
        return send(w, route, (who, path, body), key="twin-key")
    finally:
        release.set()
        holder.join()


def too_large(w: World, route: str) -> Reply:
    who, path, _ = happy(w, route)
    method = route.split(" ", 1)[0]
    padding = b'{"pad": "' + b"x" * 20_000 + b'"}'
    return w.api.call(method, path, who, raw=padding)


# A valid request that differs from the happy one (validation runs before the key is looked at).
DIFFERENT_BODY: dict[str, Callable[[World], Any]] = {
    "POST /jobs": lambda w: job_body(["iron"]),
    "POST /jobs/{job_id}/accept": lambda w: {"version": w.open_job["version"]},
    "POST /jobs/{job_id}/transitions": lambda w: {
        "event": "release",
        "version": w.held_job["version"],
    },
    "PUT /jobs/{job_id}/photos/{slot}": lambda w: {"photo_id": "{photo}"},
    "POST /photos": lambda w: {"content_type": "image/png"},
    "PUT /workers/me": lambda w: {"skills": ["iron"]},
    "POST /jobs/{job_id}/rating": lambda w: {"stars": 4},
    "POST /jobs/{job_id}/applications": lambda w: {"note": "another"},
    "POST /jobs/{job_id}/assign": lambda w: {"worker_id": OTHER[0], "version": 2},
}
# Or another job, when the body has nothing to vary.
OTHER_PATH: dict[str, Callable[[World], str]] = {
    "POST /jobs/{job_id}/decline": lambda w: f"/jobs/{w.held_job['id']}/decline",
}


def key_reused(w: World, route: str) -> Reply:
    request = happy(w, route)
    first = send(w, route, request, key="reused-key")
    assert first.status < 300, first.body
    who, path, body = request
    if route in OTHER_PATH:
        return send(w, route, (who, OTHER_PATH[route](w), body), key="reused-key")
    return send(w, route, (who, path, DIFFERENT_BODY[route](w)), key="reused-key")


def internal(w: World, route: str) -> Reply:
    """The tables the handlers use renamed away: an error nobody planned for."""
    request = prepared(w, happy(w, route))
    tables = (
        "jobs",
        "idempotency_keys",
        "workers",
        "photos",
        "job_events",
        "offer_events",
        "rosters",
    )
    for table in tables:
        w.conn.execute(f"ALTER TABLE {table} RENAME TO {table}_away")
    try:
        return send(w, route, request)
    finally:
        for table in tables:
            w.conn.execute(f"ALTER TABLE {table}_away RENAME TO {table}")


def unavailable(w: World, route: str) -> Reply:
    request = prepared(w, happy(w, route))
    redis_first = ("PUT /workers/me/location", "GET /ops/workers")
    cut = w.redis if route in redis_first else w.postgres
    cut.cut()
    try:
        return send(w, route, request)
    finally:
        cut.restore()


SCENARIOS: dict[int, Callable[[World, str], Reply]] = {
    200: success,
    201: success,
    204: success,
    400: bad_request,
    401: unauthorized,
    403: forbidden,
    404: not_found,
    409: conflict,
    413: too_large,
    422: key_reused,
    500: internal,
    503: unavailable,
}


@pytest.fixture
def short_lock_waits(role_timeouts: Any) -> None:
    role_timeouts(lock_timeout_ms=200)


@pytest.mark.parametrize(("route", "status"), documented())
def test_every_documented_status_is_reachable(
    route: str, status: int, short_lock_waits: None, world: World
) -> None:
    reply = SCENARIOS[status](world, route)
    assert reply.status == status, (route, reply.status, reply.body)
    if status >= 400:
        assert set(reply.body) == {"error"} and reply.body["error"]["code"]
    if status == 201:
        assert reply.headers["Location"], route
    if status == 503:
        assert reply.headers["Retry-After"] == str(RETRY_AFTER_S), route
