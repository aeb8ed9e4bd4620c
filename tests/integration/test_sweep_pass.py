"""One sweep pass (issue 34 point 8, issue 36 point 4): the leases first, again after any duty
that kept them waiting, and last, whatever another duty does; each other duty on its own
schedule and budget; and stalled offer rounds resent ten to a queue call, once each.

Found from outside: after connection kills, sweeps ran 20-36 s apart and leases outlived their
end by up to 19.6 s, the pass resending up to 100 stalled rounds one queue call at a time, and
every one of them again on the next pass."""

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest

from dispatch import aws, db, sweeper
from dispatch.offers.models import WaveRequest
from dispatch.sweeper import SweepIncomplete, SweepReport
from tests.integration.test_leases import expire
from tests.integration.test_offers import open_job
from tests.support import Api, on_the_queue, walk_to, worker

LOCK_WAIT_POLLS = 600


def published_ago(conn: db.Connection, seconds: int) -> None:
    """Every job's opening event reached the bus this long ago (its round started then)."""
    conn.execute(
        "UPDATE job_events SET published_at = now() - make_interval(secs => %s)", (seconds,)
    )


def wait_until_blocked(conn: db.Connection, table: str) -> None:
    """Until some session waits for a lock on `table` (polled: a state, not a time)."""
    for _ in range(LOCK_WAIT_POLLS):
        waiting = conn.execute(
            "SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
            (table,),
        ).fetchone()
        if waiting and waiting["n"]:
            return
        threading.Event().wait(0.05)
    pytest.fail(f"nobody waited for {table}")


def test_a_lease_that_ends_while_another_duty_is_slow_is_reopened_by_the_same_pass(
    api: Api, conn: db.Connection, database_url: str
) -> None:
    """The stalled rounds' read waits on a lock the test holds; meanwhile a second lease ends.
    The pass reopens the first lease before that duty and the second after it."""
    first = walk_to(api, "assigned", holder=worker("first"))
    second = walk_to(api, "assigned", holder=worker("second"))
    expire(conn, first["id"])
    outcome: list[SweepReport | BaseException] = []

    def run() -> None:
        with db.connect(database_url) as own:  # the owner: no lock timeout, it waits
            try:
                outcome.append(sweeper.sweep(own))
            except BaseException as error:
                outcome.append(error)

    with db.connect(database_url) as blocker:
        with blocker.transaction():
            blocker.execute("LOCK TABLE offer_rounds_resumed IN ACCESS EXCLUSIVE MODE")
            thread = threading.Thread(target=run)
            thread.start()
            wait_until_blocked(conn, "offer_rounds_resumed")
            expire(conn, second["id"])  # its lease ends while the pass is held up
        thread.join()

    (report,) = outcome
    assert isinstance(report, SweepReport), report
    assert report.reopened == 2
    statuses = conn.execute(
        "SELECT status FROM jobs WHERE id = ANY(%s)", ([first["id"], second["id"]],)
    ).fetchall()
    assert statuses == [{"status": "open"}, {"status": "open"}]


def test_a_failing_duty_leaves_the_leases_and_the_other_duties_their_turn(
    api: Api, conn: db.Connection, configure: Any, queues: dict[str, str]
) -> None:
    """The offer queue is gone (its send fails): the leases are reopened, the duties after it
    run, and the run still fails, so the sweeper's alarm says so."""
    held = walk_to(api, "assigned", holder=worker("holder"))
    expire(conn, held["id"])
    open_job(conn)
    published_ago(conn, 3600)  # a stalled round to resend
    configure(OFFER_QUEUE_URL=queues["offers"] + "-gone")

    with pytest.raises(SweepIncomplete) as incomplete:
        sweeper.sweep(conn)

    assert incomplete.value.failed == ["stalled_offer_rounds"]
    report = incomplete.value.report
    assert (report.reopened, report.duties_failed, report.rounds_resumed) == (1, 1, 0)
    assert report.duties == {
        "choice_deadlines": "ran",
        "stalled_offer_rounds": "failed",
        "market_answers": "not due",  # the `nearest` policy needs neither market duty
        "market_curve": "not due",
        "idempotency_keys": "ran",
        "worker_positions": "ran",
    }
    reopened = conn.execute("SELECT status FROM jobs WHERE id = %s", (held["id"],)).fetchone()
    assert reopened == {"status": "open"}


def test_a_duty_over_its_budget_is_followed_by_the_leases_turn(
    api: Api, conn: db.Connection, database_url: str, configure: Any
) -> None:
    """The stalled rounds' read waits on a lock past its budget while a lease ends; the
    idempotency keys' duty, after it, waits on another lock. The lease is reopened while the
    pass is still held up at the keys: its turn came right after the slow duty, not last."""
    configure(DISPATCH_SWEEP_INTERVAL_SECONDS="1")  # an eighth of a second: the gap and budget
    held = walk_to(api, "assigned", holder=worker("holder"))
    outcome: list[SweepReport | BaseException] = []

    def run() -> None:
        with db.connect(database_url) as own:  # the owner: no lock timeout, it waits
            try:
                outcome.append(sweeper.sweep(own))
            except BaseException as error:
                outcome.append(error)

    with db.connect(database_url) as rounds, db.connect(database_url) as keys:
        with keys.transaction():
            keys.execute("LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE")
            with rounds.transaction():
                rounds.execute("LOCK TABLE offer_rounds_resumed IN ACCESS EXCLUSIVE MODE")
                thread = threading.Thread(target=run)
                thread.start()
                wait_until_blocked(conn, "offer_rounds_resumed")
                expire(conn, held["id"])
                threading.Event().wait(sweeper.LEASE_GAP * 1 + 0.1)  # past its budget, 1/8 s
            wait_until_blocked(conn, "idempotency_keys")
            job = conn.execute("SELECT status FROM jobs WHERE id = %s", (held["id"],)).fetchone()
            assert job == {"status": "open"}  # while the keys' duty still waits
        thread.join()

    (report,) = outcome
    assert isinstance(report, SweepReport), report
    assert report.reopened == 1 and report.lease_turns >= 3  # first, after the slow duty, last
    assert report.duties["worker_positions"] == "ran"  # the duties after it had their turn


def test_a_duty_runs_on_its_schedule_kept_between_passes(
    api: Api, conn: db.Connection, database_url: str
) -> None:
    """Each pass on a connection of its own, as each Lambda invocation: the schedule is the
    database's. The keys' duty runs, is not due on the next pass (an old key stays), and is
    due again an hour after its last run."""

    def a_pass() -> SweepReport:
        with db.connect(database_url) as own:
            return sweeper.sweep(own)

    first = a_pass()
    assert first.duties["idempotency_keys"] == "ran"
    assert first.duties["worker_positions"] == "ran"
    walk_to(api, "open", holder=worker("nobody"))  # its key, made a day and an hour ago
    conn.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'")
    keys = conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone()
    assert keys and keys["n"] > 0

    second = a_pass()
    assert second.duties["idempotency_keys"] == "not due"
    assert second.duties["worker_positions"] == "not due"
    assert second.duties["choice_deadlines"] == "ran"  # every pass
    assert second.expired_keys == 0
    assert conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone() == keys

    conn.execute("UPDATE sweep_duties SET ran_at = ran_at - interval '1 hour'")
    third = a_pass()
    assert (third.duties["idempotency_keys"], third.expired_keys) == ("ran", keys["n"])
    assert third.duties["worker_positions"] == "ran"


@pytest.fixture
def batch_calls() -> Iterator[tuple[list[int], set[UUID]]]:
    """Each SendMessageBatch's number of entries, and the jobs whose entries the queue is to
    refuse: their delay is made one the queue does not take (over 900 s), so the stand-in
    answers those entries Failed, as SQS does, and takes the others."""
    calls: list[int] = []
    refuse: set[UUID] = set()

    def watch(params: dict[str, Any], **_: Any) -> None:
        calls.append(len(params["Entries"]))
        for entry in params["Entries"]:
            if WaveRequest.model_validate_json(entry["MessageBody"]).job_id in refuse:
                entry["DelaySeconds"] = 901

    events = aws.client("sqs").meta.events
    events.register("before-parameter-build.sqs.SendMessageBatch", watch)
    try:
        yield calls, refuse
    finally:
        events.unregister("before-parameter-build.sqs.SendMessageBatch", watch)


def test_stalled_rounds_go_ten_to_a_call_once_each_and_only_the_refused_again(
    conn: db.Connection,
    queues: dict[str, str],
    configure: Any,
    batch_calls: tuple[list[int], set[UUID]],
) -> None:
    # A share of the period no queue call outlasts on a loaded machine: this is about batches.
    configure(DISPATCH_SWEEP_INTERVAL_SECONDS="3600")
    calls, refuse = batch_calls
    jobs = [open_job(conn)[0] for _ in range(105)]  # more than a pass takes (its batch, 100)
    published_ago(conn, 3600)
    refuse.update(jobs[n] for n in (0, 17, 58))
    conn.execute(  # the oldest stalled: the first pass's hundred hold them
        "UPDATE job_events SET published_at = published_at - interval '1 hour'"
        " WHERE job_id = ANY(%s)",
        (list(refuse),),
    )

    def sent() -> Counter[UUID]:
        return Counter(
            WaveRequest.model_validate_json(b).job_id for b in on_the_queue(queues["offers"])
        )

    report = sweeper.sweep(conn)
    first = sent()
    assert calls == [10] * 10
    assert (report.rounds_resumed, report.rounds_left) == (97, 3)
    assert set(first.values()) == {1}  # none twice
    assert len(first) == 97 and not refuse & set(first)

    calls.clear()
    refuse.clear()  # the queue takes them now
    report = sweeper.sweep(conn)
    second = sent()
    assert calls == [8]  # the three refused, and the five the first pass had no room for
    assert (report.rounds_resumed, report.rounds_left) == (8, 0)
    assert set(second.values()) == {1}
    assert set(second) == set(jobs) - set(first)  # a round the queue took is not resent

    calls.clear()
    assert sweeper.sweep(conn).rounds_resumed == 0  # each resumed within the stall period
    assert calls == [] and sent() == Counter()
