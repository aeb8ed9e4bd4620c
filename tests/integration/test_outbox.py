"""Outbox delivery, with moto standing in for SQS and EventBridge and a real Postgres: every
committed event reaches the bus once per consumer effect, in version order per job."""

import json
import threading
import time
from collections.abc import Sequence
from functools import partial
from typing import Any
from uuid import UUID

import boto3
import pytest

from dispatch import aws, db
from dispatch.config.outbox import outbox_settings
from dispatch.jobs import commands
from dispatch.jobs.models import TransitionEvent
from dispatch.jobs.requests import CreateJob
from dispatch.outbox import relay
from dispatch_local.services import app_url
from tests.integration.test_accept_races import together
from tests.support import (
    BUSINESS,
    Api,
    drain,
    in_parallel,
    job_body,
    make_job,
    make_worker,
    on_the_bus,
    on_the_queue,
    walk_to,
    worker,
)


def committed(conn: db.Connection) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT id, job_id, version FROM job_events ORDER BY job_id, version"
    ).fetchall()


def assert_delivered_once_in_order(conn: db.Connection, bus: list[dict[str, Any]]) -> None:
    ids = [UUID(e["detail"]["id"]) for e in bus]
    assert len(ids) == len(set(ids)), "an event reached the bus twice"
    assert set(ids) == {r["id"] for r in committed(conn)}
    per_job: dict[str, list[int]] = {}
    for e in bus:
        assert e["source"] == "dispatch.jobs"
        assert e["detail-type"] == e["detail"]["type"]
        per_job.setdefault(e["detail"]["job_id"], []).append(e["detail"]["version"])
    for versions in per_job.values():
        assert versions == sorted(versions), versions
    unpublished = conn.execute("SELECT count(*) AS n FROM job_events WHERE published_at IS NULL")
    assert unpublished.fetchone() == {"n": 0}


def test_writes_through_the_handlers_reach_the_bus_in_order(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    for n in range(3):
        walk_to(api, "completed", holder=worker(n))
    # Relayed right after each commit: nothing is left for the catch-up.
    assert relay.catch_up(conn, relay.sqs_send) == 0
    drain(queues["outbox"])
    bus = on_the_bus(queues["tap"])
    assert_delivered_once_in_order(conn, bus)
    assert len(bus) == 3 * 6  # created, assigned, photo, started, photo, completed


def write_lives(url: str, jobs: int) -> None:
    """Jobs created, accepted and checked in from several threads at once (no relay)."""
    from dispatch.auth import Caller, Role

    def life(n: int) -> None:
        with db.connect(url) as conn:
            spec = CreateJob.model_validate({**job_body(), "skills": []})
            for k in range(jobs):
                job = commands.create_job(conn, "business-1", spec)
                held = commands.accept_job(conn, job.id, f"w-{n}-{k}", None)
                commands.transition(
                    conn,
                    job.id,
                    Caller(f"w-{n}-{k}", frozenset({Role.WORKER})),
                    TransitionEvent.RELEASE,
                    held.version,
                )

    in_parallel([partial(life, n) for n in range(4)])


def test_many_jobs_written_concurrently_two_relays_in_parallel(
    conn: db.Connection, database_url: str, queues: dict[str, str]
) -> None:
    write_lives(database_url, jobs=15)
    sent = together([lambda c: relay.catch_up(c, relay.sqs_send)] * 2, database_url)
    assert sum(sent) == 4 * 15 * 3
    drain(queues["outbox"])
    assert_delivered_once_in_order(conn, on_the_bus(queues["tap"]))


def test_two_relays_never_send_one_event_twice_in_a_pass(
    conn: db.Connection, database_url: str
) -> None:
    write_lives(database_url, jobs=10)
    passes: list[list[UUID]] = [[], []]
    start = threading.Barrier(2)

    def recorder(n: int) -> relay.Send:
        def send(messages: list[relay.Message], deadline: float) -> set[UUID]:
            passes[n] += [m.id for m in messages]
            return {m.id for m in messages}

        return send

    def relay_pass(n: int) -> Any:
        with db.connect(database_url) as c:
            start.wait()
            return relay.relay_once(c, recorder(n))

    for _ in range(5):
        in_parallel([lambda: relay_pass(0), lambda: relay_pass(1)])
        assert not set(passes[0]) & set(passes[1]), "one event sent twice in the same pass"
        passes = [passes[0] + passes[1], []]  # the next round starts from what was sent
    # Events a pass left (an earlier one of their job held by the other relay) go in a later
    # pass; in the end every event went out exactly once.
    assert len(passes[0]) == len(set(passes[0])) == 120


class Crash(Exception):
    pass


def test_a_relay_that_dies_after_sending_duplicates_and_the_publisher_ignores_it(
    conn: db.Connection, database_url: str, queues: dict[str, str]
) -> None:
    write_lives(database_url, jobs=2)

    def send_then_crash(messages: list[relay.Message], deadline: float) -> set[UUID]:
        relay.sqs_send(messages, deadline)
        raise Crash  # before the pass could record its send

    with pytest.raises(Crash):
        relay.relay_once(conn, send_then_crash)
    # Nothing recorded the send: the claims were let go and the catch-up sends all again.
    assert relay.catch_up(conn, relay.sqs_send) == 24
    # SQS FIFO drops repeats within five minutes; past that window they do arrive twice:
    sqs = boto3.client("sqs")
    for event in conn.execute(
        "SELECT job_id, id, dispatch_event(e)::text AS body FROM job_events e"
    ).fetchall():
        sqs.send_message(
            QueueUrl=queues["outbox"],
            MessageBody=event["body"],
            MessageGroupId=str(event["job_id"]),
            MessageDeduplicationId=f"late-{event['id']}",
        )
    drain(queues["outbox"])
    assert_delivered_once_in_order(conn, on_the_bus(queues["tap"]))


def forget_sends(conn: db.Connection) -> None:
    """Time passes beyond the resend period since every send so far."""
    conn.execute(
        "UPDATE job_events SET relayed_at = relayed_at - make_interval(secs => %s)"
        " WHERE relayed_at IS NOT NULL",
        (outbox_settings().relay_resend_seconds + 1,),
    )


def test_messages_the_queue_lost_are_sent_again_and_reach_the_bus(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    """The queue took the messages and then lost them (the local stand-in killed with its
    stack): SQS's acceptance is not publication, so the events are not lost."""
    job = walk_to(api, "assigned", holder=worker(1))
    assert on_the_queue(queues["outbox"])  # sent after each commit, and now gone
    unpublished = conn.execute("SELECT count(*) AS n FROM job_events WHERE published_at IS NULL")
    assert unpublished.fetchone() == {"n": job["version"]}
    assert relay.catch_up(conn, relay.sqs_send) == 0  # sent moments ago: not yet
    forget_sends(conn)
    assert relay.catch_up(conn, relay.sqs_send) == job["version"]
    drain(queues["outbox"])
    assert_delivered_once_in_order(conn, on_the_bus(queues["tap"]))


def test_a_backlog_is_not_sent_again_on_every_pass(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    """Resends back off (migration 0056): an event that had waited long before its send (a
    publisher behind, not a lost message) goes again only after as long again; one sent
    promptly still goes again after the resend period, and none waits more than five minutes
    for its next send (issue 36: every pass used to resend the whole backlog to a queue
    already behind)."""
    job = make_job(api)
    on_the_queue(queues["outbox"])  # the queue lost it
    resend = outbox_settings().relay_resend_seconds

    def sent(waited_before: float, since: float) -> None:
        conn.execute(
            "UPDATE job_events SET relayed_at = now() - make_interval(secs => %(since)s),"
            " occurred_at = now() - make_interval(secs => %(since)s + %(waited)s)"
            " WHERE job_id = %(job)s",
            {"since": since, "waited": waited_before, "job": job["id"]},
        )

    sent(waited_before=3 * resend, since=2 * resend)
    assert relay.catch_up(conn, relay.sqs_send) == 0  # sent again later than every pass
    sent(waited_before=3 * resend, since=3 * resend + 1)
    assert relay.catch_up(conn, relay.sqs_send) == job["version"]
    sent(waited_before=0, since=resend + 1)  # a prompt send that the queue lost
    assert relay.catch_up(conn, relay.sqs_send) == job["version"]
    sent(waited_before=3600, since=299)  # an hour behind: sent again within five minutes
    assert relay.catch_up(conn, relay.sqs_send) == 0
    sent(waited_before=3600, since=301)
    assert relay.catch_up(conn, relay.sqs_send) == job["version"]
    drain(queues["outbox"])
    assert_delivered_once_in_order(conn, on_the_bus(queues["tap"]))


def test_a_later_message_first_puts_the_earlier_events_first(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    """Only the last event's message arrives (the others lost, or resent later): the bus still
    gets every version, in order, and the late messages change nothing."""
    job = walk_to(api, "assigned", holder=worker(1))
    messages = on_the_queue(queues["outbox"])
    assert len(messages) == job["version"]
    sqs = boto3.client("sqs")
    for body in [messages[-1], *messages[:-1]]:  # the newest first, then the others late
        event = json.loads(body)
        sqs.send_message(
            QueueUrl=queues["outbox"],
            MessageBody=body,
            MessageGroupId=event["job_id"],
            MessageDeduplicationId=f"again-{event['id']}",
        )
    drain(queues["outbox"])
    bus = on_the_bus(queues["tap"])
    assert [e["detail"]["version"] for e in bus] == list(range(1, job["version"] + 1))
    assert_delivered_once_in_order(conn, bus)


def test_a_pass_sends_only_while_its_claim_lasts_and_lets_the_rest_go(
    conn: db.Connection, database_url: str
) -> None:
    write_lives(database_url, jobs=2)
    seen: list[float] = []

    def too_late(messages: list[relay.Message], deadline: float) -> set[UUID]:
        seen.append(deadline - time.monotonic())
        return relay.sqs_send(messages, deadline=time.monotonic() - 1)  # the claim ran out

    report = relay.relay_once(conn, too_late)
    assert (report.claimed, report.sent) == (24, 0)
    left = seen[0]
    assert 0 < left <= outbox_settings().relay_claim_seconds * relay.SENDING_SHARE_OF_CLAIM
    held = conn.execute(
        "SELECT count(*) AS n FROM job_events"
        " WHERE relay_claimed_until IS NOT NULL OR relayed_at IS NOT NULL"
    ).fetchone()
    assert held == {"n": 0}, "what was not sent must be free for the next pass at once"
    assert relay.catch_up(conn, relay.sqs_send) == 24


def test_a_pass_stops_sending_when_its_caller_must_end_sooner_than_its_claim(
    conn: db.Connection, database_url: str
) -> None:
    """The relay function's own time bounds a pass too: one started with seconds left sends
    no later than they allow (cut off by Lambda's timeout between its sends and its marks,
    what it sent would go again)."""
    write_lives(database_url, jobs=1)
    seen: list[float] = []

    def record(messages: list[relay.Message], deadline: float) -> set[UUID]:
        seen.append(deadline)
        return relay.sqs_send(messages, deadline)

    soon = time.monotonic() + 2  # well inside the claim's sending window
    assert relay.catch_up(conn, record, send_by=lambda: soon) == 12
    assert seen == [soon]
    assert relay.catch_up(conn, record) == 0


def test_a_pass_whose_connection_died_while_sending_records_on_a_new_one(
    conn: db.Connection, database_url: str
) -> None:
    """Found under connection kills: a pass's last statement ran on a connection killed long
    before, and the whole pass was done again."""
    write_lives(database_url, jobs=1)
    with db.connect(app_url(database_url)) as relaying:

        def send_while_killed(messages: list[relay.Message], deadline: float) -> set[UUID]:
            conn.execute("SELECT pg_terminate_backend(%s)", (relaying.info.backend_pid,))
            return relay.sqs_send(messages, deadline)

        report = relay.relay_once(relaying, send_while_killed)
    assert report.sent == 12
    recorded = conn.execute(
        "SELECT count(*) AS n FROM job_events"
        " WHERE relayed_at IS NOT NULL AND relay_claimed_until IS NULL"
    ).fetchone()
    assert recorded == {"n": 12}
    assert relay.catch_up(conn, relay.sqs_send) == 0  # nothing is sent twice


def test_sqs_down_at_commit_then_back(
    api: Api, conn: db.Connection, queues: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    aws.client.cache_clear()
    try:
        job = walk_to(api, "assigned", holder=worker(1))  # every write still succeeds
    finally:
        monkeypatch.undo()
        aws.client.cache_clear()
    waiting = conn.execute("SELECT count(*) AS n FROM job_events WHERE published_at IS NULL")
    assert waiting.fetchone() == {"n": job["version"]}
    conn.execute("UPDATE job_events SET relay_claimed_until = NULL")  # the failed claims lapse
    assert relay.catch_up(conn, relay.sqs_send) == job["version"]
    drain(queues["outbox"])
    assert_delivered_once_in_order(conn, on_the_bus(queues["tap"]))


def test_a_rolled_back_change_publishes_nothing(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    def create_then_fail() -> None:
        with conn.transaction():
            commands.create_job(conn, "business-1", CreateJob.model_validate(job_body()))
            raise Crash

    with pytest.raises(Crash):
        create_then_fail()
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}
    assert relay.catch_up(conn, relay.sqs_send) == 0
    drain(queues["outbox"])
    assert on_the_bus(queues["tap"]) == []


def test_a_poison_message_goes_to_the_dlq_and_blocks_no_other_job(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    sqs = boto3.client("sqs")
    sqs.send_message(
        QueueUrl=queues["outbox"],
        MessageBody="this is not an event",
        MessageGroupId="poisoned-job",
        MessageDeduplicationId="poison-1",
    )
    make_worker(api, worker(1))
    api.call("POST", "/jobs", BUSINESS, job_body())
    api.call("POST", "/jobs", BUSINESS, job_body())
    drain(queues["outbox"])
    assert on_the_queue(queues["dlq"]) == ["this is not an event"]
    assert_delivered_once_in_order(conn, on_the_bus(queues["tap"]))


BACKLOG = 5_000


def build_backlog(conn: db.Connection, jobs: int) -> None:
    """`jobs` open jobs whose job.created events never left (an SQS outage, say)."""
    conn.execute(
        """
        WITH made AS (
            INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
            SELECT 'backlog', 10, 10, '{}', now(), now() + interval '2 hours'
              FROM generate_series(1, %(jobs)s)
            RETURNING *, dispatch_job(jobs) AS document
        )
        INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
        SELECT id, 'job.created', 1, business_id, created_at, document FROM made
        """,
        {"jobs": jobs},
    )


def test_a_write_relays_its_own_events_only_and_the_catch_up_drains_the_backlog(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    """Found from outside: the relay after a commit ignored its job and carried up to a
    thousand events of other jobs per request (minutes per write after an SQS outage)."""
    build_backlog(conn, BACKLOG)
    job = make_job(api)
    make_worker(api, worker("after-the-outage"))
    assert (
        api.call("POST", f"/jobs/{job['id']}/accept", worker("after-the-outage"), {}).status == 200
    )

    touched = conn.execute(
        """SELECT DISTINCT job_id FROM job_events
            WHERE relayed_at IS NOT NULL OR relay_claimed_until IS NOT NULL"""
    ).fetchall()
    assert [row["job_id"] for row in touched] == [UUID(job["id"])]
    assert [e["detail"]["version"] for e in on_the_bus_after(queues)] == [1, 2]
    waiting = conn.execute("SELECT count(*) AS n FROM job_events WHERE published_at IS NULL")
    assert waiting.fetchone() == {"n": BACKLOG}

    sent: list[UUID] = []

    def record(messages: list[relay.Message], deadline: float) -> set[UUID]:
        sent.extend(m.id for m in messages)
        return {m.id for m in messages}

    assert relay.catch_up(conn, record) == BACKLOG
    assert len(set(sent)) == BACKLOG
    waiting = conn.execute("SELECT count(*) AS n FROM job_events WHERE relayed_at IS NULL")
    assert waiting.fetchone() == {"n": 0}


def on_the_bus_after(queues: dict[str, str]) -> list[dict[str, Any]]:
    drain(queues["outbox"])
    return on_the_bus(queues["tap"])


# -- offer events: the same outbox (issue 36, point 3) ----------------------------------------


def events_of_both_tables(conn: db.Connection) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT id, published_at FROM job_events"
        " UNION ALL SELECT id, published_at FROM offer_events"
    ).fetchall()


def test_offer_events_travel_the_outbox_once_in_their_jobs_order(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    """Application events (offer_events) are relayed right after their commit, as a change's
    are, and reach the bus once, through the same queue and publisher, among their job's own
    events in one order: a version's job event, then what was written at that version."""
    from tests.integration.test_business_choice import apply, assign, choice_job

    job = choice_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
        assert apply(api, job, worker(n)).status == 201
    assert api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(2)).status == 204
    assert assign(api, job, BUSINESS, "worker-1").status == 200
    assert relay.catch_up(conn, relay.sqs_send) == 0  # every writer relayed its own
    drain(queues["outbox"])
    bus = on_the_bus(queues["tap"])
    assert [(e["detail-type"], e["detail"]["version"]) for e in bus] == [
        ("job.created", 1),
        ("application.created", 1),
        ("application.created", 1),
        ("application.withdrawn", 1),
        ("job.assigned", 2),
    ]
    ids = [e["detail"]["id"] for e in bus]
    assert len(set(ids)) == len(ids)
    assert {str(r["id"]) for r in events_of_both_tables(conn)} == set(ids)
    assert all(r["published_at"] is not None for r in events_of_both_tables(conn))


def test_offer_events_a_crash_left_after_their_commit_are_sent_by_the_catch_up(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    """The writer died between its commit and its relay (the command ran, nothing after it):
    the relay's catch-up sends the offer events as it does job events, the publisher puts
    them on the bus once, and a queue that then lost them costs a resend, not the events."""
    from dispatch.choice import commands as choice
    from tests.integration.test_business_choice import choice_job

    job = choice_job(api)
    drain(queues["outbox"])  # job.created, relayed by its writer
    for n in (1, 2):
        make_worker(api, worker(n))
        choice.apply(conn, UUID(job["id"]), worker(n)[0], None)  # committed, never relayed
    drain(queues["outbox"])
    assert [e["detail-type"] for e in on_the_bus(queues["tap"])] == ["job.created"]

    assert relay.catch_up(conn, relay.sqs_send) == 2
    assert on_the_queue(queues["outbox"])  # sent, and lost with the queue
    assert relay.catch_up(conn, relay.sqs_send) == 0  # sent moments ago: not yet
    conn.execute(
        "UPDATE offer_events SET relayed_at = relayed_at - make_interval(secs => %s)",
        (outbox_settings().relay_resend_seconds + 1,),
    )
    assert relay.catch_up(conn, relay.sqs_send) == 2
    drain(queues["outbox"])
    bus = on_the_bus(queues["tap"])
    assert [e["detail-type"] for e in bus] == ["application.created"] * 2
    assert {e["detail"]["data"]["worker_id"] for e in bus} == {"worker-1", "worker-2"}
    assert relay.catch_up(conn, relay.sqs_send) == 0
    assert all(r["published_at"] is not None for r in events_of_both_tables(conn))


def test_a_catch_up_pass_claims_the_oldest_of_both_tables_a_batch_at_most(
    conn: db.Connection, configure: Any
) -> None:
    """One claim, one bound: a pass takes at most `relay_batch_size` events of the two tables
    together, oldest first, and the next pass the rest."""
    configure(DISPATCH_RELAY_BATCH_SIZE="3")
    build_backlog(conn, 2)
    conn.execute(
        """INSERT INTO offer_events (job_id, type, version, occurred_at, data)
           SELECT job_id, 'job.unfilled', 1, occurred_at + interval '1 s',
                  '{"waves": 3, "offered": 0}' FROM job_events"""
    )
    conn.execute("UPDATE job_events SET occurred_at = occurred_at - interval '1 hour'")
    passes: list[list[str]] = []

    def record(messages: list[relay.Message], deadline: float) -> set[UUID]:
        passes.append([json.loads(m.body)["type"] for m in messages])
        return {m.id for m in messages}

    assert relay.catch_up(conn, record) == 4
    assert [sorted(p) for p in passes] == [
        ["job.created", "job.created", "job.unfilled"],
        ["job.unfilled"],
    ]


def test_the_publisher_puts_ten_to_a_call_and_a_failure_leaves_the_rest_for_the_retry(
    conn: db.Connection,
) -> None:
    """A job and a crowd of applications: the publisher puts them ten to a PutEvents call, in the
    job's order, and marks each call's events once it went through; a call that fails stops
    the job there, and the retry (the message again) puts what is left, in order."""
    from dispatch.events import Event
    from dispatch.outbox import publisher

    build_backlog(conn, 1)
    (job,) = conn.execute("SELECT job_id, occurred_at FROM job_events").fetchall()
    conn.execute(
        """INSERT INTO offer_events (job_id, type, version, actor, occurred_at, data)
           SELECT %(job)s, 'application.created', 1, 'w-' || n, at,
                  jsonb_build_object('job_id', %(job)s, 'worker_id', 'w-' || n,
                                     'applied_at', dispatch_time(at), 'note', NULL)
             FROM generate_series(1, 14) n,
                  LATERAL (SELECT %(at)s::timestamptz + n * interval '1 ms' AS at) t""",
        {"job": job["job_id"], "at": job["occurred_at"]},
    )
    calls: list[list[Event]] = []

    def second_call_fails(events: Sequence[Event]) -> None:
        calls.append(list(events))
        if len(calls) == 2:
            raise publisher.PublishFailed("the bus said no")

    with pytest.raises(publisher.PublishFailed):
        publisher.publish_up_to(conn, {job["job_id"]: 1}, second_call_fails)
    first = [e.type for e in calls[0]]
    assert first == ["job.created"] + ["application.created"] * 9
    left = conn.execute(
        "SELECT count(*) AS n FROM offer_events WHERE published_at IS NULL"
    ).fetchone()
    assert left == {"n": 5}

    put: list[Event] = []
    assert len(publisher.publish_up_to(conn, {job["job_id"]: 1}, put.extend)) == 5
    assert [e.data["worker_id"] for e in put] == [f"w-{n}" for n in range(10, 15)]
    assert publisher.publish_up_to(conn, {job["job_id"]: 1}, put.extend) == []  # once


def test_a_batchs_jobs_go_ten_events_to_a_call_each_job_in_its_order(
    conn: db.Connection,
) -> None:
    """The publisher's first pass over a batch: every job its messages name, up to each one's
    highest version, ten events to a PutEvents call whatever job they are of (a call per
    message was a call per event), each job's events in its order, later versions left."""
    from dispatch.events import Event
    from dispatch.outbox import publisher

    build_backlog(conn, 12)
    jobs = [r["job_id"] for r in conn.execute("SELECT job_id FROM job_events").fetchall()]
    conn.execute(  # a second version of each job, the first six of them announced up to it
        """INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
           SELECT job_id, 'job.cancelled', 2, actor, occurred_at + interval '1 s', data
             FROM job_events WHERE version = 1"""
    )
    heads = {job: (2 if n < 6 else 1) for n, job in enumerate(jobs)}
    calls: list[list[Event]] = []
    put = publisher.publish_up_to(conn, heads, lambda events: calls.append(list(events)))

    assert [len(call) for call in calls] == [10, 8]
    assert len(put) == 18
    versions: dict[UUID, list[int]] = {}
    for event in put:
        versions.setdefault(event.job_id, []).append(event.version)
    assert versions == {job: [1, 2] if n < 6 else [1] for n, job in enumerate(jobs)}
    left = conn.execute(
        "SELECT count(*) AS n FROM job_events WHERE published_at IS NULL"
    ).fetchone()
    assert left == {"n": 6}  # the later versions no message named yet
