"""What a connection said to Postgres, read from libpq's protocol trace: the statements and
the round trips. Used by the tests that count them and by the accept benchmark."""

import itertools
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq


@dataclass
class Wire:
    statements: list[str]  # of the request's transaction, up to its COMMIT
    round_trips: int  # of that transaction
    after_commit: list[str]  # what followed (the outbox relay of the change's events)
    after_commit_round_trips: int


def traced(call: Callable[[], object], conn: psycopg.Connection[Any] | None = None) -> Wire:
    """Run `call` and read the messages `conn` (by default this environment's connection)
    exchanged meanwhile."""
    if conn is None:
        from dispatch import db

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
        (i, _statement(kind, rest))
        for i, (_, kind, rest) in enumerate(messages)
        if kind in ("Parse", "Query")
    ]
    # The request's own work ends where the outbox relay of its events begins (after commit).
    relay = next((i for i, sql in parsed if "relay_claimed_until" in sql), len(messages))
    end = max((i for i in range(relay) if messages[i][1] == "ReadyForQuery"), default=relay)
    directions = [direction for direction, _, _ in messages]
    return Wire(
        statements=[sql for i, sql in parsed if i <= end],
        round_trips=_round_trips(directions[: end + 1]),
        after_commit=[sql for i, sql in parsed if i > end],
        after_commit_round_trips=_round_trips(directions[end + 1 :]),
    )


def _statement(kind: str, rest: str) -> str:
    if kind == "Query":  # the simple protocol: BEGIN, COMMIT
        return rest.strip().strip('"')
    return re.match(r' "[^"]*" "(.*)" \d+', rest, re.S).group(1)  # type: ignore[union-attr]


def _round_trips(directions: list[str]) -> int:
    """A round trip is a run of client messages followed by the server's answers."""
    return sum(1 for pair in itertools.pairwise(directions) if pair == ("F", "B"))
