"""What the accept sends to Postgres, counted from the wire (libpq's protocol trace)."""

import itertools
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from psycopg import pq

from dispatch import db
from tests.support import Api, make_job, make_worker, worker


@dataclass
class Wire:
    statements: list[str]  # of the request's transaction, up to its COMMIT
    round_trips: int  # of that transaction
    after_commit: list[str]  # what followed (the outbox relay of the change's events)


def traced(call: Callable[[], object]) -> Wire:
    """Run `call` and read the messages its environment's connection exchanged."""
    conn = db.connection()
    with tempfile.TemporaryFile() as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            call()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        text = trace.read().decode()
    # Messages start at a line "F|B<tab>length<tab>Type"; statement text may span lines.
    messages = re.findall(r"^([FB])\t\d+\t(\w+)\t?(.*?)(?=^[FB]\t\d+\t|\Z)", text, re.M | re.S)
    parsed = [
        (i, re.match(r' "[^"]*" "(.*)" \d+', rest, re.S).group(1))  # type: ignore[union-attr]
        for i, (_, kind, rest) in enumerate(messages)
        if kind == "Parse"
    ]
    # The request's own work ends where the outbox relay of its events begins (after commit).
    relay = next((i for i, sql in parsed if "relay_claimed_until" in sql), len(messages))
    end = max((i for i in range(relay) if messages[i][1] == "ReadyForQuery"), default=relay)
    # A round trip is a run of client messages followed by the server's answers.
    directions = [direction for direction, _, _ in messages[: end + 1]]
    round_trips = sum(1 for pair in itertools.pairwise(directions) if pair == ("F", "B"))
    return Wire(
        statements=[sql for i, sql in parsed if i <= end],
        round_trips=round_trips,
        after_commit=[sql for i, sql in parsed if i > end],
    )


def test_accept_happy_path_is_one_round_trip(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    api.call("GET", "/health", None, key=None)  # the environment's connection exists already

    replies = []
    wire = traced(
        lambda: replies.append(api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}))
    )
    assert replies[0].status == 200
    assert wire.round_trips == 1, wire
    # One statement, its own transaction: the conditional UPDATE, its event, and the key with
    # its answer (a key already taken would fail it whole).
    (statement,) = wire.statements
    assert statement.split()[0].upper() == "WITH"
    for part in ("UPDATE jobs", "INSERT INTO job_events", "INSERT INTO idempotency_keys"):
        assert part in statement, part
    # The outbox relay runs only after the commit: claim the new event, (send), mark it sent.
    assert [s.split()[0].upper() for s in wire.after_commit] == ["WITH", "UPDATE"]
    assert "relay_claimed_until" in wire.after_commit[0]


def test_losing_costs_more_but_stays_small(api: Api) -> None:
    job = make_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
    api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    replies = []
    wire = traced(
        lambda: replies.append(api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {}))
    )
    assert replies[0].code == "JOB_TAKEN"
    # The same first round trip, one read to name the cause, one to store the 409.
    assert wire.round_trips == 3, wire
