"""Leases with fencing, and the sweeper: reopened once, never read-then-write, safe in parallel."""

from collections.abc import Iterator
from typing import Any

import pytest

from dispatch import db
from dispatch.auth import Caller, Role
from dispatch.config import settings
from dispatch.errors import Code, DispatchError
from dispatch.jobs import commands
from dispatch.jobs.models import TransitionEvent
from dispatch.jobs.requests import CreateJob
from dispatch.sweeper import sweep
from tests.conftest import empty_the_tables
from tests.integration.test_accept_races import together
from tests.support import Api, job_body, make_worker, walk_to, worker

HOLDER = worker("holder")


def expire(conn: db.Connection, job_id: Any = None) -> None:
    """Let leases run out (the clock is the database's: move the deadline, not time)."""
    conn.execute(
        "UPDATE jobs SET lease_expires_at = now() - interval '1 second' "
        "WHERE status = 'assigned' AND (%(id)s::uuid IS NULL OR id = %(id)s)",
        {"id": job_id},
    )


def test_the_sweeper_reopens_with_a_new_version_and_one_event(
    api: Api, conn: db.Connection
) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    untouched = walk_to(api, "assigned", holder=worker("busy-but-fine"))
    expire(conn, job["id"])
    report = sweep(conn)
    assert report.reopened == 1
    row = conn.execute("SELECT * FROM jobs WHERE id = %s", (job["id"],)).fetchone()
    assert row is not None
    assert (row["status"], row["version"], row["assignee_id"]) == ("open", job["version"] + 1, None)
    assert row["lease_expires_at"] is None
    assert row["before_photo_id"] is None
    event = conn.execute(
        "SELECT type, actor, data FROM job_events WHERE job_id = %s AND version = %s",
        (job["id"], job["version"] + 1),
    ).fetchone()
    assert event is not None
    assert (event["type"], event["actor"]) == ("job.reopened", "system:lease-sweeper")
    # The event carries the public Job as it now is; who held it is the previous version's.
    assert (event["data"]["status"], event["data"]["assignee_id"]) == ("open", None)
    still = conn.execute("SELECT status FROM jobs WHERE id = %s", (untouched["id"],)).fetchone()
    assert still == {"status": "assigned"}
    assert sweep(conn).reopened == 0  # nothing twice


def test_a_stale_worker_is_fenced_out(api: Api, conn: db.Connection) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    expire(conn, job["id"])
    sweep(conn)
    newcomer = worker("newcomer")
    make_worker(api, newcomer)
    taken = api.call("POST", f"/jobs/{job['id']}/accept", newcomer, {})
    assert taken.status == 200
    for event in ("check_in", "start", "release"):
        reply = api.call(
            "POST",
            f"/jobs/{job['id']}/transitions",
            HOLDER,
            {"event": event, "version": job["version"]},
        )
        assert (reply.status, reply.code) == (409, "VERSION_CONFLICT"), event
    # The newcomer's evidence starts empty: the old holder's before photo went with him.
    assert taken.body["before_photo_id"] is None


def test_an_expired_lease_is_taken_over_without_the_sweeper(api: Api, conn: db.Connection) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    expire(conn, job["id"])
    newcomer = worker("newcomer")
    make_worker(api, newcomer)
    taken = api.call("POST", f"/jobs/{job['id']}/accept", newcomer, {})
    assert taken.status == 200
    assert taken.body["before_photo_id"] is None
    reply = api.call(
        "POST", f"/jobs/{job['id']}/transitions", HOLDER, {"event": "start", "version": 3}
    )
    assert reply.code == "VERSION_CONFLICT"


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DISPATCH_SWEEP_BATCH_SIZE", "7")
    settings.cache_clear()
    yield
    monkeypatch.undo()
    settings.cache_clear()


def expired_jobs(conn: db.Connection, count: int) -> list[Any]:
    """`count` assigned jobs, each held by its own worker, all with their lease run out."""
    empty_the_tables(conn)
    spec = CreateJob.model_validate({**job_body(), "skills": []})  # anyone may take it
    ids = []
    for n in range(count):
        job = commands.create_job(conn, "business-1", spec)
        commands.accept_job(conn, job.id, f"w-{n}", None)
        ids.append(job.id)
    expire(conn)
    return ids


def test_two_sweepers_in_parallel_reopen_each_job_exactly_once(
    conn: db.Connection, database_url: str, small_batches: None
) -> None:
    for _ in range(5):
        ids = expired_jobs(conn, 60)
        reports = together([sweep, sweep, sweep], database_url)
        assert sum(r.reopened for r in reports) == 60, reports
        reopened = conn.execute(
            "SELECT job_id, count(*) AS n FROM job_events WHERE type = 'job.reopened' "
            "GROUP BY job_id"
        ).fetchall()
        assert sorted(r["job_id"] for r in reopened) == sorted(ids)
        assert {r["n"] for r in reopened} == {1}
        versions = conn.execute("SELECT DISTINCT status, version FROM jobs").fetchall()
        assert versions == [{"status": "open", "version": 3}]


def test_a_check_in_racing_the_sweeper_wins_or_loses_never_both(
    conn: db.Connection, database_url: str
) -> None:

    holder = Caller("w-0", frozenset({Role.WORKER}))
    for _ in range(30):
        (job_id,) = expired_jobs(conn, 1)

        def check_in(c: db.Connection, job: Any = job_id) -> str:
            try:
                commands.transition(c, job, holder, TransitionEvent.CHECK_IN, 2)
            except DispatchError as error:
                return error.code.value
            return "extended"

        result, report = together([check_in, sweep], database_url)
        row = conn.execute("SELECT status, version FROM jobs").fetchone()
        assert row is not None
        if result == "extended":
            assert report.reopened == 0
            assert row == {"status": "assigned", "version": 3}
        else:
            assert result == Code.VERSION_CONFLICT.value
            assert report.reopened == 1
            assert row == {"status": "open", "version": 3}
        events = conn.execute("SELECT count(*) AS n FROM job_events").fetchone()
        assert events == {"n": 3}  # created, assigned, and exactly one of checked_in / reopened


def test_the_sweeper_function_reports_and_expires_keys(api: Api, conn: db.Connection) -> None:
    from dispatch_local.events import LambdaContext
    from dispatch_local.template import handler_of, schedules

    (sweeper,) = [s for s in schedules() if s.function == "LeaseSweeperFunction"]
    assert sweeper.every_seconds == 60
    walk_to(api, "assigned", holder=HOLDER)
    expire(conn)
    conn.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
    result = handler_of(sweeper)(
        {}, LambdaContext(function_name=sweeper.function, timeout_seconds=60)
    )
    assert result["reopened"] == 1
    assert result["expired_keys"] > 0
    assert conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone() == {"n": 0}


def test_a_stuck_relay_and_a_dead_queue_never_hold_up_a_lease(
    api: Api, conn: db.Connection, database_url: str
) -> None:
    """Reopening leases never waits on relaying (issue "Off the lucky path"): while a relay
    pass holds every unpublished event row (claimed, then stuck mid-send) and the queue cannot
    be reached at all, the sweeper function still reopens the expired lease at once, and its
    new event waits for the relay like any other."""
    import os

    from dispatch_local import environment_restored
    from dispatch_local.events import LambdaContext
    from dispatch_local.template import handler_of, schedules

    (sweeper,) = [s for s in schedules() if s.function == "LeaseSweeperFunction"]
    job = walk_to(api, "assigned", holder=HOLDER)
    expire(conn)
    with (
        environment_restored("OUTBOX_QUEUE_URL"),
        db.connect(database_url) as relay,
        relay.transaction(),
    ):
        os.environ["OUTBOX_QUEUE_URL"] = "http://127.0.0.1:9/000000000000/nowhere.fifo"
        settings.cache_clear()
        held = relay.execute(
            "SELECT id FROM job_events WHERE published_at IS NULL FOR UPDATE"
        ).fetchall()
        assert held, "the stuck pass holds the backlog"
        result = handler_of(sweeper)(
            {}, LambdaContext(function_name=sweeper.function, timeout_seconds=60)
        )
        assert result["reopened"] == 1
        reopened = conn.execute(
            "SELECT published_at, relayed_at FROM job_events"
            " WHERE job_id = %s AND type = 'job.reopened'",
            [job["id"]],
        ).fetchall()
        assert reopened == [{"published_at": None, "relayed_at": None}]
    past = api.call("GET", f"/jobs/{job['id']}", HOLDER).body  # a past holder reads its end
    assert (past["status"], past["assignee_id"]) == ("open", None)
