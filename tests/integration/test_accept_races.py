"""Races proven in parallel: callers released together behind a barrier, each with its own
identity and its own connection, through the very database path the accept handler runs
(idempotency key + conditional UPDATE + event, one transaction), repeated many times. A loser
who held an offer of the round is recorded as willing (job_races_lost, migration 0057)."""

import uuid
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

from dispatch import db, idempotency
from dispatch.errors import DispatchError
from dispatch.jobs import commands
from dispatch.jobs.requests import CreateJob
from tests.conftest import empty_the_tables
from tests.support import in_parallel, job_body

T = TypeVar("T")


def together(calls: list[Callable[[db.Connection], T]], url: str) -> list[Any]:
    """Every call on its own thread and its own connection (opened first), released at once."""
    conns = [db.connect(url) for _ in calls]
    try:
        return in_parallel([partial(call, conn) for call, conn in zip(calls, conns, strict=True)])
    finally:
        for conn in conns:
            conn.close()


def accept_call(job_id: UUID, worker_id: str) -> Callable[[db.Connection], int]:
    request = idempotency.KeyedRequest(worker_id, str(uuid.uuid4()), "fp-" + str(job_id), "r")

    def call(conn: db.Connection) -> int:
        answer = idempotency.execute(
            conn,
            request,
            lambda c, key: commands.accept_job(c, job_id, worker_id, None, key),
            200,
        )
        return answer.status

    return call


def setup(conn: db.Connection, jobs: int, workers: list[str]) -> list[UUID]:
    empty_the_tables(conn)
    for w in workers:
        conn.execute("INSERT INTO workers (id, skills) VALUES (%s, '{wash}')", (w,))
    spec = CreateJob.model_validate(job_body(["wash"]))
    return [commands.create_job(conn, "business-1", spec).id for _ in range(jobs)]


def test_three_workers_one_job_exactly_one_wins(conn: db.Connection, database_url: str) -> None:
    for _ in range(40):
        workers = ["w-1", "w-2", "w-3"]
        (job_id,) = setup(conn, 1, workers)
        statuses = together([accept_call(job_id, w) for w in workers], database_url)
        assert sorted(statuses) == [200, 409, 409], statuses
        row = conn.execute("SELECT version, assignee_id FROM jobs").fetchone()
        assert row is not None and row["version"] == 2 and row["assignee_id"] in workers
        assert conn.execute("SELECT count(*) AS n FROM job_events").fetchone() == {"n": 2}
        # Every loser's 409 was stored with its key; the winner's 200 too.
        stored = conn.execute("SELECT status_code FROM idempotency_keys").fetchall()
        assert sorted(r["status_code"] for r in stored) == [200, 409, 409]


def test_twenty_workers_ten_jobs_one_holder_each(conn: db.Connection, database_url: str) -> None:
    workers = [f"w-{i}" for i in range(20)]
    for round_ in range(8):
        jobs = setup(conn, 10, workers)
        # Two workers on every job, paired differently each round.
        calls = [accept_call(jobs[(i * 7 + round_) % 10], w) for i, w in enumerate(workers)]
        statuses = together(calls, database_url)
        assert all(not isinstance(s, BaseException) for s in statuses), statuses
        holders = conn.execute(
            "SELECT id, assignee_id FROM jobs WHERE status = 'assigned'"
        ).fetchall()
        assert Counter(s for s in statuses if s == 200)[200] == len(holders)
        assert len({h["assignee_id"] for h in holders}) == len(holders)  # no worker holds two
        assert len(holders) == 10  # every job found exactly one holder
        events = conn.execute(
            "SELECT count(*) AS n FROM job_events WHERE type = 'job.assigned'"
        ).fetchone()
        assert events == {"n": 10}


def test_same_worker_two_jobs_at_once_one_wins_other_is_busy(
    conn: db.Connection, database_url: str
) -> None:
    for _ in range(30):
        first, second = setup(conn, 2, ["w-1"])
        statuses = together([accept_call(first, "w-1"), accept_call(second, "w-1")], database_url)
        assert sorted(statuses) == [200, 409], statuses
        codes = conn.execute(
            "SELECT body::jsonb -> 'error' ->> 'code' AS code FROM idempotency_keys "
            "WHERE status_code = 409"
        ).fetchall()
        assert codes == [{"code": "WORKER_BUSY"}]


def test_race_never_raises_unexpected_errors(conn: db.Connection, database_url: str) -> None:
    (job_id,) = setup(conn, 1, [f"w-{i}" for i in range(12)])
    results = together([accept_call(job_id, f"w-{i}") for i in range(12)], database_url)
    unexpected = [r for r in results if isinstance(r, BaseException)]
    assert unexpected == []
    assert sorted(results) == [200] + [409] * 11
    assert not any(isinstance(r, DispatchError) for r in results)


def offered(conn: db.Connection, job_id: UUID, workers: list[str]) -> None:
    """An offer of the job's first round to each of `workers` (as a wave writes them)."""
    for w in workers:
        conn.execute(
            "INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)"
            " VALUES (%s, %s, 1, 1, 500)",
            (job_id, w),
        )


def lost_races(conn: db.Connection) -> dict[str, Any]:
    rows = conn.execute("SELECT worker_id, lost_at FROM job_races_lost").fetchall()
    return {r["worker_id"]: r["lost_at"] for r in rows}


def test_every_loser_who_held_an_offer_is_recorded_and_nobody_else(
    conn: db.Connection, database_url: str
) -> None:
    """Four workers hold an offer and one does not; all five tap Accept at once. One wins;
    every loser is answered 409 JOB_TAKEN, and each who held an offer has a lost race recorded
    (committed, though the answer was a refusal); the winner and the one without an offer
    have none. A second tap writes nothing new."""
    with_offer = ["w-1", "w-2", "w-3", "w-4"]
    everyone = [*with_offer, "w-none"]
    unoffered_lost = 0
    for _ in range(15):
        (job_id,) = setup(conn, 1, everyone)
        offered(conn, job_id, with_offer)
        statuses = together([accept_call(job_id, w) for w in everyone], database_url)
        assert sorted(statuses) == [200, 409, 409, 409, 409], statuses
        codes = conn.execute(
            "SELECT body::jsonb -> 'error' ->> 'code' AS code FROM idempotency_keys"
            " WHERE status_code = 409"
        ).fetchall()
        assert [c["code"] for c in codes] == ["JOB_TAKEN"] * 4
        winner = conn.execute("SELECT assignee_id FROM jobs").fetchone()
        assert winner is not None
        recorded = lost_races(conn)
        assert set(recorded) == set(with_offer) - {winner["assignee_id"]}
        unoffered_lost += winner["assignee_id"] != "w-none"
        # Again, each loser with a new key: the same refusal, nothing new written.
        again = together([accept_call(job_id, w) for w in everyone if w not in {
            winner["assignee_id"]}], database_url)  # fmt: skip
        assert again == [409] * 4
        assert lost_races(conn) == recorded
    assert unoffered_lost > 0  # the worker without an offer lost at least once


def test_the_winner_and_a_loser_without_an_offer_write_no_lost_race(
    conn: db.Connection, database_url: str
) -> None:
    """Taken one after the other: the winner's path writes nothing, nor does a loser who was
    never offered the job; a loser who was, once another won, does."""
    (job_id,) = setup(conn, 1, ["w-1", "w-2", "w-3"])
    offered(conn, job_id, ["w-1"])
    assert accept_call(job_id, "w-2")(conn) == 200  # the unoffered worker wins
    assert accept_call(job_id, "w-3")(conn) == 409  # unoffered: no record
    assert lost_races(conn) == {}
    assert accept_call(job_id, "w-1")(conn) == 409  # offered, lost to w-2
    assert set(lost_races(conn)) == {"w-1"}
