"""What is written once, held together where the languages differ.

The job's status sets (a worker holds the job: live; nothing moves it any more: finished) are
Python sets in `jobs.models` and SQL functions of migration 0053 (dispatch_live, ...), which
every statement of the layer calls; the migrations' indexes and checks spell them in SQL of
their own. Found from outside: the live statuses were written as a literal ten times.
"""

import re
from pathlib import Path

import psycopg.sql
import pytest

from dispatch.db import Connection
from dispatch.jobs.models import FINISHED_STATUSES, LIVE_STATUSES, TAKEN_STATUSES, JobStatus
from dispatch_local import REPO_ROOT

LAYER = REPO_ROOT / "shared" / "dispatch"
EVERY = {status.value for status in JobStatus}
LIVE = {status.value for status in LIVE_STATUSES}
FINISHED = {status.value for status in FINISHED_STATUSES}
TAKEN = {status.value for status in TAKEN_STATUSES}

# A list of two or more statuses written in SQL: ('assigned', 'in_progress'), ...
ANY_STATUS = "|".join(sorted(EVERY))
STATUS_LIST = re.compile(rf"\(\s*'(?:{ANY_STATUS})'(?:\s*,\s*'[a-z_]+')+\s*\)")


def names(text: str) -> set[str]:
    return set(re.findall(r"'([a-z_]+)'", text))


# Each set's SQL function, and the statuses it must hold.
SQL_SETS = {
    "dispatch_live": LIVE,
    "dispatch_finished": FINISHED,
    "dispatch_unfinished": EVERY - FINISHED,
    "dispatch_untaken": EVERY - TAKEN,
}


@pytest.mark.parametrize("function", sorted(SQL_SETS))
def test_the_sql_sets_are_the_models(conn: Connection, function: str) -> None:
    """Asked of every status, each function answers true for exactly its model set."""
    held = conn.execute(
        psycopg.sql.SQL("SELECT array_agg(s) AS held FROM unnest(%s::text[]) s WHERE {}(s)").format(
            psycopg.sql.Identifier(function)
        ),
        [sorted(EVERY)],
    ).fetchone()
    assert held is not None
    assert set(held["held"]) == SQL_SETS[function]
    assert LIVE.isdisjoint(FINISHED)


def status_lists(path: Path) -> list[str]:
    return STATUS_LIST.findall(path.read_text())


def test_no_statement_of_the_layer_spells_a_set() -> None:
    written = {
        str(path.relative_to(LAYER)): found
        for path in sorted(LAYER.rglob("*.py"))
        if (found := status_lists(path))
    }
    assert written == {}  # each set is a function of migration 0053


def test_a_second_literal_would_be_seen(tmp_path: Path) -> None:
    copy = tmp_path / "offers.py"
    copy.write_text("BUSY = \"SELECT 1 FROM jobs WHERE status IN ('assigned', 'in_progress')\"")
    assert status_lists(copy) == ["('assigned', 'in_progress')"]


@pytest.mark.parametrize(
    ("index", "statuses"),
    [
        ("jobs_one_live_job_per_worker", LIVE),
        ("jobs_live_by_place", EVERY - FINISHED),
        ("jobs_recently_finished", FINISHED),
    ],
)
def test_the_migrations_indexes_use_the_same_sets(
    conn: Connection, index: str, statuses: set[str]
) -> None:
    row = conn.execute(
        "SELECT pg_get_expr(indpred, indrelid) AS predicate FROM pg_index"
        " WHERE indexrelid = %s::regclass",
        (index,),
    ).fetchone()
    assert row is not None
    assert names(row["predicate"]) == statuses


@pytest.mark.parametrize(
    ("constraint", "statuses"), [("jobs_status_valid", EVERY), ("jobs_assignee_iff_taken", TAKEN)]
)
def test_the_migrations_checks_use_the_same_sets(
    conn: Connection, constraint: str, statuses: set[str]
) -> None:
    row = conn.execute(
        "SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conname = %s",
        (constraint,),
    ).fetchone()
    assert row is not None
    assert names(row["definition"]) == statuses
