"""Who may do what: every route by every kind of caller, against a job that is assigned, and
the choice routes against a job its business chooses for (an applicant, a blocked applicant).

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
    "apply": ("POST", "/jobs/{job}/applications", {}),
    "withdraw": ("DELETE", "/jobs/{job}/applications/me", None),
    "applicants": ("GET", "/jobs/{job}/applications", None),
    "assign": ("POST", "/jobs/{job}/assign", {"worker_id": "worker-2", "version": "{version}"}),
    "favourite": ("PUT", "/businesses/me/favourites/worker-1", None),
    "unfavourite": ("DELETE", "/businesses/me/favourites/worker-1", None),
    "favourites": ("GET", "/businesses/me/favourites", None),
    "block": ("PUT", "/businesses/me/blocked/worker-2", None),
    "unblock": ("DELETE", "/businesses/me/blocked/worker-2", None),
    "blocked": ("GET", "/businesses/me/blocked", None),
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
    # The job is first come: nobody applies or assigns; its applicants are its owner's to read.
    "apply":         (F,          F,              "JOB_IS_FIRST_COME",    "JOB_IS_FIRST_COME", F),
    "withdraw":      (F,          F,              N,                      N,                 F),
    "applicants":    (200,        N,              F,                      F,                 200),
    "assign":        ("JOB_IS_FIRST_COME", N,     F,                      F,                 F),
    # Rosters: every business has its own ("me"), nobody else has one.
    "favourite":     (200,        200,            F,                      F,                 F),
    "unfavourite":   (204,        204,            F,                      F,                 F),
    "favourites":    (200,        200,            F,                      F,                 F),
    "block":         (200,        200,            F,                      F,                 F),
    "unblock":       (204,        204,            F,                      F,                 F),
    "blocked":       (200,        200,            F,                      F,                 F),
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


def answered_as(reply: Reply, expected: int | str) -> None:
    """A cell of a table: the exact status, or the code with its status and fixed sentence."""
    if isinstance(expected, int):
        assert reply.status == expected, reply.body
    else:
        assert reply.code == expected, (reply.status, reply.body)
        assert reply.status == CATALOGUE[Code(expected)].status
    if reply.status >= 400:
        assert reply.code is not None, (reply.status, reply.body)
        assert reply.body["error"]["message"] == CATALOGUE[Code(reply.code)].message


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

    answered_as(reply, EXPECTED[route][list(CALLERS).index(caller)])


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


# The same, against an open job the business chooses for: one worker has applied, a second
# applied and was then blocked by the owner (an applicant who became blocked), a third never
# applied. Apply, withdraw, the applicants and the assign run here on the kind of job they
# are for, and the blocked worker is a caller of its own.
APPLICANT, BLOCKED, BYSTANDER = worker("applicant"), worker("blocked"), worker("bystander")
CHOICE_CALLERS = {
    "owner": OWNER,
    "other-business": OTHER_BUSINESS,
    "applicant": APPLICANT,
    "blocked": BLOCKED,
    "other-worker": BYSTANDER,
    "ops": OPS,
}
CHOICE_ROUTES: dict[str, tuple[str, str, Any]] = {
    "read": ("GET", "/jobs/{job}", None),
    "accept": ("POST", "/jobs/{job}/accept", {}),
    "apply": ("POST", "/jobs/{job}/applications", {}),
    "withdraw": ("DELETE", "/jobs/{job}/applications/me", None),
    "applicants": ("GET", "/jobs/{job}/applications", None),
    "assign applicant": (
        "POST", "/jobs/{job}/assign", {"worker_id": APPLICANT[0], "version": "{version}"}
    ),
    "assign blocked": (
        "POST", "/jobs/{job}/assign", {"worker_id": BLOCKED[0], "version": "{version}"}
    ),
    "assign bystander": (
        "POST", "/jobs/{job}/assign", {"worker_id": BYSTANDER[0], "version": "{version}"}
    ),
    "cancel": transition("cancel"),
}  # fmt: skip
B, C = "BLOCKED_BY_BUSINESS", "BUSINESS_CHOOSES"
#                     owner  other-business  applicant  blocked  other-worker  ops
CHOICE_EXPECTED: dict[str, tuple[Any, Any, Any, Any, Any, Any]] = {
    "read":             (200,  N,              N,         N,       N,            200),
    "accept":           (F,    F,              C,         B,       C,            F),
    "apply":            (F,    F,              201,       B,       201,          F),
    "withdraw":         (F,    F,              204,       204,     N,            F),
    "applicants":       (200,  N,              F,         F,       F,            200),
    "assign applicant": (200,  N,              F,         F,       F,            F),
    "assign blocked":   ("APPLICANT_BLOCKED", N, F,       F,       F,            F),
    "assign bystander": ("NOT_AN_APPLICANT", N, F,        F,       F,            F),
    "cancel":           (200,  N,              F,         F,       F,            F),
}  # fmt: skip


@pytest.mark.parametrize("caller", list(CHOICE_CALLERS))
@pytest.mark.parametrize("route", list(CHOICE_ROUTES))
def test_every_choice_route_by_every_caller(
    api: Api, cache: redis.Redis, route: str, caller: str
) -> None:
    from tests.support import job_body

    body = {**job_body(), "assignment": "business_choice"}
    job = api.call("POST", "/jobs", OWNER, body).body
    for who in (APPLICANT, BLOCKED, BYSTANDER):
        make_worker(api, who)
    for who in (APPLICANT, BLOCKED):
        applied = api.call("POST", f"/jobs/{job['id']}/applications", who, {})
        assert applied.status == 201, applied.body
    blocked = api.call("PUT", f"/businesses/me/blocked/{BLOCKED[0]}", OWNER)
    assert blocked.status == 200, blocked.body
    method, path, template = CHOICE_ROUTES[route]

    reply = api.call(
        method, path.format(job=job["id"]), CHOICE_CALLERS[caller], fill(template, job, "")
    )

    answered_as(reply, CHOICE_EXPECTED[route][list(CHOICE_CALLERS).index(caller)])
