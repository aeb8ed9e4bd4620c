"""Who may call what: 401 without identity, 403 for the wrong role, 404 for other people's jobs."""

import uuid

import pytest

from dispatch.db import Connection
from tests.support import BUSINESS, OPS, Api, job_body, make_job, make_worker, worker

STRANGER_BUSINESS = ("business-2", "business")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/jobs", job_body()),
        ("POST", "/jobs/{job}/accept", {}),
        ("GET", "/jobs/{job}", None),
        ("GET", "/jobs/{job}/events", None),
        ("PUT", "/workers/me", {"skills": ["wash"]}),
    ],
)
def test_no_identity_is_401(api: Api, method: str, path: str, body: object) -> None:
    reply = api.call(method, path.format(job=uuid.uuid4()), None, body)
    assert (reply.status, reply.code) == (401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    ("method", "path", "who", "body"),
    [
        ("POST", "/jobs", worker(1), job_body()),
        ("POST", "/jobs", OPS, job_body()),
        ("POST", "/jobs/{job}/accept", BUSINESS, {}),
        ("POST", "/jobs/{job}/accept", OPS, {}),
        ("PUT", "/workers/me", BUSINESS, {"skills": ["wash"]}),
        ("GET", "/jobs/{job}", ("x-1", "admin"), None),
    ],
)
def test_wrong_role_is_403(
    api: Api, conn: Connection, method: str, path: str, who: tuple[str, str], body: object
) -> None:
    reply = api.call(method, path.format(job=uuid.uuid4()), who, body)
    assert (reply.status, reply.code) == (403, "FORBIDDEN")
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}


def test_who_sees_a_job(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    for who in (BUSINESS, worker(1), OPS):
        assert api.call("GET", f"/jobs/{job['id']}", who).status == 200, who
        assert api.call("GET", f"/jobs/{job['id']}/events", who).status == 200, who
    for who in (STRANGER_BUSINESS, worker(2)):
        for path in (f"/jobs/{job['id']}", f"/jobs/{job['id']}/events"):
            reply = api.call("GET", path, who)
            assert (reply.status, reply.code) == (404, "NOT_FOUND"), (who, path)


def test_a_strangers_job_looks_exactly_like_no_job(api: Api) -> None:
    job = make_job(api)
    theirs = api.call("GET", f"/jobs/{job['id']}", STRANGER_BUSINESS)
    missing = api.call("GET", f"/jobs/{uuid.uuid4()}", STRANGER_BUSINESS)
    assert theirs.status == missing.status == 404
    assert theirs.body["error"]["message"] == missing.body["error"]["message"]


def test_job_and_events_read_back(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    accepted = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).body
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body == accepted
    events = api.call("GET", f"/jobs/{job['id']}/events", OPS).body["events"]
    assert [(e["type"], e["version"], e["actor"]) for e in events] == [
        ("job.created", 1, "business-1"),
        ("job.assigned", 2, "worker-1"),
    ]
    assert events[1]["data"]["assignee_id"] == "worker-1"  # the job as it became
    assert all(e["job_id"] == job["id"] for e in events)


def test_created_job_matches_the_contract(api: Api) -> None:
    body = job_body(["wash", "wax"])
    job = make_job(api, skills=["wash", "wax"])
    assert set(job) == {
        "id", "status", "version", "business_id", "assignee_id", "location", "skills",
        "window", "min_rating", "lease_expires_at", "before_photo_id", "after_photo_id",
        "rating", "created_at", "updated_at", "assignment", "auto_pick", "choose_within_s",
        "offer_first_to",
    }  # fmt: skip
    assert (job["assignment"], job["auto_pick"], job["choose_within_s"]) == (
        "first_come",
        None,
        None,
    )
    assert job["status"] == "open"
    assert job["version"] == 1
    assert job["business_id"] == "business-1"
    assert job["location"] == body["location"]
    assert uuid.UUID(job["id"]).version == 7


def test_worker_profile(api: Api) -> None:
    reply = api.call("PUT", "/workers/me", worker(1), {"skills": ["wash", "wax", "wash"]})
    assert reply.status == 200
    assert reply.body == {"id": "worker-1", "skills": ["wash", "wax"], "rating": None}
    reply = api.call("PUT", "/workers/me", worker(1), {"skills": []})
    assert reply.body["skills"] == []


def test_health_needs_no_token(api: Api) -> None:
    reply = api.call("GET", "/health", None, key=None)
    assert (reply.status, reply.body) == (200, {"status": "ok"})
