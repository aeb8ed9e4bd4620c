"""Accept through the handler: the winner, and a clear, distinct 409 for every way to lose."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from dispatch.db import Connection
from tests.support import BUSINESS, Api, make_job, make_worker, walk_to, worker


def accept(api: Api, job_id: str, who: tuple[str, str], body: object = None) -> tuple[int, object]:
    reply = api.call("POST", f"/jobs/{job_id}/accept", who, {} if body is None else body)
    return reply.status, reply.body if reply.status == 200 else reply.code


def test_winner_gets_the_job_with_a_lease(api: Api, conn: Connection) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    before = datetime.now(UTC)
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {"version": 1})
    assert reply.status == 200
    assert reply.body["status"] == "assigned"
    assert reply.body["assignee_id"] == "worker-1"
    assert reply.body["version"] == 2
    lease = datetime.fromisoformat(reply.body["lease_expires_at"])
    assert before + timedelta(seconds=590) < lease < datetime.now(UTC) + timedelta(seconds=610)
    events = conn.execute(
        "SELECT type, version, actor FROM job_events WHERE job_id = %s ORDER BY version",
        (job["id"],),
    ).fetchall()
    assert events == [
        {"type": "job.created", "version": 1, "actor": "business-1"},
        {"type": "job.assigned", "version": 2, "actor": "worker-1"},
    ]


def test_empty_body_is_an_accept_without_version(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), None)
    assert reply.status == 200, reply.body


def test_loser_hears_job_taken(api: Api) -> None:
    job = make_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
    assert accept(api, job["id"], worker(1))[0] == 200
    status, code = accept(api, job["id"], worker(2))
    assert (status, code) == (409, "JOB_TAKEN")


def test_taking_the_same_job_twice_is_busy_not_taken(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    assert accept(api, job["id"], worker(1))[0] == 200
    assert accept(api, job["id"], worker(1)) == (409, "WORKER_BUSY")


@pytest.mark.parametrize("status", ["cancelled", "completed"])
def test_finished_jobs_are_unavailable_not_taken(api: Api, status: str) -> None:
    job = walk_to(api, status, holder=worker(9))
    make_worker(api, worker(1))
    assert accept(api, job["id"], worker(1)) == (409, "JOB_UNAVAILABLE")


def test_stale_version_is_a_version_conflict(api: Api, conn: Connection) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    conn.execute("UPDATE jobs SET version = 3 WHERE id = %s", (job["id"],))
    assert accept(api, job["id"], worker(1), {"version": 1}) == (409, "VERSION_CONFLICT")
    assert accept(api, job["id"], worker(1), {"version": 3})[0] == 200


def test_missing_skill(api: Api) -> None:
    job = make_job(api, skills=["wash", "wax"])
    make_worker(api, worker(1), ["wash"])
    assert accept(api, job["id"], worker(1)) == (403, "SKILLS_MISSING")


def test_worker_without_a_profile_lacks_skills(api: Api) -> None:
    job = make_job(api, skills=["wash"])
    assert accept(api, job["id"], worker("no-profile")) == (403, "SKILLS_MISSING")


def test_worker_holding_another_job_is_busy(api: Api) -> None:
    first, second = make_job(api), make_job(api)
    make_worker(api, worker(1))
    assert accept(api, first["id"], worker(1))[0] == 200
    assert accept(api, second["id"], worker(1)) == (409, "WORKER_BUSY")


def test_unknown_job_is_not_found(api: Api) -> None:
    make_worker(api, worker(1))
    assert accept(api, str(uuid.uuid4()), worker(1)) == (404, "NOT_FOUND")


def test_expired_lease_is_claimable_at_once(api: Api, conn: Connection) -> None:
    job = make_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
    assert accept(api, job["id"], worker(1))[0] == 200
    conn.execute(
        "UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
        (job["id"],),
    )
    status, body = accept(api, job["id"], worker(2), {"version": 2})
    assert status == 200
    assert isinstance(body, dict)
    assert (body["assignee_id"], body["version"]) == ("worker-2", 3)
    # The silent worker's view (version 2) is dead, and worker 1 is free to take other work.
    assert accept(api, job["id"], worker(1), {"version": 2}) == (409, "JOB_TAKEN")
    assert accept(api, make_job(api)["id"], worker(1))[0] == 200


def test_only_workers_accept(api: Api) -> None:
    job = make_job(api)
    assert accept(api, job["id"], BUSINESS) == (403, "FORBIDDEN")
    reply = api.call("POST", f"/jobs/{job['id']}/accept", None, {})
    assert (reply.status, reply.code) == (401, "UNAUTHORIZED")
