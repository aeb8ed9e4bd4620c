"""The history checker finds each kind of violation it names, in histories and database states
made wrong on purpose (plain SQL where the application would never do it), and finds nothing
in a consistent one."""

import time
from typing import Any

from dispatch.db import Connection
from dispatch_local import history as hist
from tests.support import Api, make_job, make_worker, worker


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
    conn.execute("UPDATE job_events SET published_at = now() WHERE published_at IS NULL")


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
