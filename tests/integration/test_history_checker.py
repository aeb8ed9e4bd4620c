"""The history checker finds each kind of violation it names, in histories and database states
made wrong on purpose (plain SQL where the application would never do it), and finds nothing
in a consistent one."""

import time
from typing import Any

import pytest

from dispatch.db import Connection
from dispatch_local import history as hist
from tests.support import BUSINESS, Api, job_body, make_job, make_worker, worker


def op(
    client: str, route: str, path: str, status: int, response: Any, body: Any = None, **more: Any
) -> hist.Op:
    now = time.monotonic()
    return hist.Op(
        client,
        route,
        "POST",
        path,
        "k",
        body,
        now,
        now,
        hist.outcome_of(status),
        status,
        response,
        **more,
    )


def recorded(*ops: hist.Op) -> hist.History:
    log = hist.History()
    for o in ops:
        log.invoke(o)
    return log


def publish_all(conn: Connection) -> None:
    """What the publisher does for both tables of the one outbox."""
    conn.execute("UPDATE job_events SET published_at = now() WHERE published_at IS NULL")
    conn.execute("UPDATE offer_events SET published_at = now() WHERE published_at IS NULL")


def a_real_race(api: Api, conn: Connection) -> tuple[hist.History, dict[str, Any]]:
    """Two workers on one job through the handlers: a consistent history."""
    job = make_job(api)
    make_worker(api, worker(1))
    make_worker(api, worker(2))
    ops = []
    for n in (1, 2):
        reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(n), {})
        ops.append(
            op(f"worker-{n}", "accept", f"/jobs/{job['id']}/accept", reply.status, reply.body)
        )
    created = op("business-1", "create", "/jobs", 201, job)
    publish_all(conn)
    return recorded(created, *ops), job


def test_a_consistent_history_passes(api: Api, conn: Connection) -> None:
    log, _ = a_real_race(api, conn)
    assert hist.check(log, conn) == []


def test_two_winners_of_one_version(api: Api, conn: Connection) -> None:
    log, job = a_real_race(api, conn)
    won = {**job, "version": 2, "status": "assigned", "assignee_id": "worker-2"}
    log.invoke(op("worker-2", "accept", f"/jobs/{job['id']}/accept", 200, won))
    found = hist.check(log, conn)
    assert any("was won by ['worker-1', 'worker-2']" in v for v in found), found


def test_a_replay_that_heard_something_else(api: Api, conn: Connection) -> None:
    log, _job = a_real_race(api, conn)
    first = log.ops[1]
    log.invoke(
        op(first.client, "accept", first.path, 409, {"error": {"code": "JOB_TAKEN"}}, retry_of=1)
    )
    found = hist.check(log, conn)
    assert any("replayed op 1" in v for v in found), found


def test_a_gap_in_the_versions(api: Api, conn: Connection) -> None:
    log, job = a_real_race(api, conn)
    conn.execute("UPDATE jobs SET version = 3 WHERE id = %s", (job["id"],))
    found = hist.check(log, conn)
    assert any("at version 3 with events [1, 2]" in v for v in found), found


def test_an_answer_without_its_event_and_an_event_without_a_request(
    api: Api, conn: Connection
) -> None:
    log, job = a_real_race(api, conn)
    conn.execute(
        "UPDATE job_events SET actor = 'worker-9' WHERE job_id = %s AND version = 2", (job["id"],)
    )
    found = hist.check(log, conn)
    assert any("answered version 2" in v for v in found), found
    assert any("by worker-9 came from no request" in v for v in found), found


def test_a_worker_holding_two_jobs(api: Api, conn: Connection) -> None:
    log, job = a_real_race(api, conn)
    other = make_job(api)
    # Written behind the application's back (and its one-live-job index): an assigned event
    # for worker-1 on a second job while it holds the first.
    conn.execute(
        "INSERT INTO job_events (job_id, type, version, actor, data)"
        " SELECT id, 'job.assigned', 2, 'worker-1', dispatch_job(j) FROM jobs j WHERE id = %s",
        (other["id"],),
    )
    found = hist.check(log, conn)
    assert f"worker-1 took job {other['id']} while holding job {job['id']}" in found, found


def test_an_expired_lease_left_alone_and_an_event_never_published(
    api: Api, conn: Connection
) -> None:
    log, job = a_real_race(api, conn)
    conn.execute(
        "UPDATE jobs SET lease_expires_at = now() - interval '1 hour' WHERE id = %s", (job["id"],)
    )
    conn.execute("UPDATE job_events SET published_at = NULL")
    found = hist.check(log, conn)
    assert any("still assigned, lease expired" in v for v in found), found
    assert sum("never reached the bus" in v for v in found) == 2, found


def a_business_choosing(api: Api, conn: Connection) -> tuple[hist.History, dict[str, Any]]:
    """A choice job, two applicants, the business assigns one: a consistent history."""
    reply = api.call("POST", "/jobs", BUSINESS, {**job_body(), "assignment": "business_choice"})
    job = reply.body
    ops = [op("business-1", "create", "/jobs", 201, job)]
    for n in (1, 2):
        make_worker(api, worker(n))
        path = f"/jobs/{job['id']}/applications"
        applied = api.call("POST", path, worker(n), {})
        ops.append(op(f"worker-{n}", "apply", path, applied.status, applied.body))
    path = f"/jobs/{job['id']}/assign"
    chosen = api.call("POST", path, BUSINESS, {"worker_id": "worker-2", "version": 1})
    ops.append(op("business-1", "assign", path, chosen.status, chosen.body))
    publish_all(conn)
    return recorded(*ops), chosen.body


def assigned_behind_the_back(conn: Connection, job_id: str, actor: str, assignee: str) -> None:
    conn.execute(
        "INSERT INTO job_events (job_id, type, version, actor, data)"
        " SELECT id, 'job.assigned', 3, %s, dispatch_job(j) || jsonb_build_object("
        "   'assignee_id', %s::text, 'status', 'assigned') FROM jobs j WHERE id = %s",
        (actor, assignee, job_id),
    )
    conn.execute("UPDATE jobs SET version = 3 WHERE id = %s", (job_id,))


def test_a_business_choosing_passes(api: Api, conn: Connection) -> None:
    log, job = a_business_choosing(api, conn)
    assert job["assignee_id"] == "worker-2"
    assert hist.check(log, conn) == []


@pytest.mark.parametrize(
    ("actor", "assignee", "said"),
    [
        ("worker-1", "worker-1", "was accepted by worker-1 although its business chooses"),
        ("system:auto-pick", "worker-7", "was assigned to worker-7, who had not applied"),
    ],
)
def test_a_choice_broken_behind_the_back(
    api: Api, conn: Connection, actor: str, assignee: str, said: str
) -> None:
    log, job = a_business_choosing(api, conn)
    assigned_behind_the_back(conn, job["id"], actor, assignee)
    found = hist.check(log, conn)
    assert f"job {job['id']} version 3 {said}" in found, found


def test_an_assignment_to_a_blocked_worker_and_a_silent_application(
    api: Api, conn: Connection
) -> None:
    log, job = a_business_choosing(api, conn)
    conn.execute(
        "INSERT INTO rosters (business_id, worker_id, list, added_at)"
        " VALUES ('business-1', 'worker-2', 'blocked', now() - interval '1 hour')"
    )
    other = api.call("POST", "/jobs", BUSINESS, {**job_body(), "assignment": "business_choice"})
    conn.execute(
        "INSERT INTO job_applications (job_id, worker_id) VALUES (%s, 'worker-1')",
        (other.body["id"],),
    )
    found = hist.check(log, conn)
    assert f"job {job['id']} version 2 was assigned to worker-2, whom its business had blocked" in (
        found
    ), found
    assert (
        f"job {other.body['id']} has an application by worker-1 without its application.created"
        in found
    ), found
