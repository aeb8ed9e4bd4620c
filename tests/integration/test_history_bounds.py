"""Every statement the product runs reads as much on 6 days of history as on 1, give or take
(issue 35): the shared buffers it touches (EXPLAIN (ANALYZE, BUFFERS): hit + read, the same on
every run, unlike its time) on the same current state with more history behind it. A statement
that scans history touches about six times as many; one that reads through an index what the
current state needs touches about as many, plus a level of an index here and there."""

import pytest

from bench import history
from dispatch import db

GROWTH = 2  # at most twice as many buffers with six times the history...
SLACK = 64  # ...plus what deeper indexes cost a statement that looks up a few hundred rows


# The outbox's statements among them (claims, marks, the publisher's read: dispatch.outbox.sql)
# read what is unpublished of both tables, job_events and offer_events, through their partial
# indexes of it: the current state, whatever history lies behind it.
@pytest.mark.parametrize("name", list(history.CASES), ids=lambda n: n.removeprefix("dispatch."))
def test_a_path_reads_no_more_with_more_history(histories: dict[int, str], name: str) -> None:
    counts = {}
    for days, url in histories.items():
        with db.connect(url) as conn:
            conn.autocommit = True
            counts[days] = history.buffers(conn, name)
    assert counts[6] <= GROWTH * counts[1] + SLACK, f"{name}: {counts} buffers by days of history"
