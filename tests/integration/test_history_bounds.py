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


# Read the current state only, a row at a time through a partial index of what is unpublished
# (offer_events_unpublished): as many heap pages as rows at most (about 240 here), packed
# together on one database and spread over free space on another; not a read of history.
CURRENT_STATE_ROWS = {"dispatch.choice.sql.JOBS_WITH_STALE_EVENTS"}


@pytest.mark.parametrize(
    "name",
    [name for name in history.CASES if name not in CURRENT_STATE_ROWS],
    ids=lambda n: n.removeprefix("dispatch."),
)
def test_a_path_reads_no_more_with_more_history(histories: dict[int, str], name: str) -> None:
    counts = {}
    for days, url in histories.items():
        with db.connect(url) as conn:
            conn.autocommit = True
            counts[days] = history.buffers(conn, name)
    assert counts[6] <= GROWTH * counts[1] + SLACK, f"{name}: {counts} buffers by days of history"


@pytest.mark.parametrize(
    "name", sorted(CURRENT_STATE_ROWS), ids=lambda n: n.removeprefix("dispatch.")
)
def test_a_read_of_the_current_state_reads_at_most_a_page_a_row(
    histories: dict[int, str], name: str
) -> None:
    for url in histories.values():
        with db.connect(url) as conn:
            conn.autocommit = True
            unpublished = conn.execute(
                "SELECT count(*) AS n FROM offer_events WHERE published_at IS NULL"
            ).fetchone()
            assert unpublished is not None
            assert history.buffers(conn, name) <= unpublished["n"] + SLACK, name
