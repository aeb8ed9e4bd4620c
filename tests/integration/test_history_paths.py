"""Paths that must stay flat with months of history behind them (issue 35): on a database
holding a large history, ANALYZE'd, each statement reads what it shows and a batch is its size.
The history is loaded once per module into its own database, straight in SQL as its owner
(the product's statements would take minutes to write this much)."""

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from dispatch import db
from dispatch.choice import sql as choice_sql
from dispatch.jobs import commands
from dispatch.ops import sql as ops_sql
from tests.conftest import create_database

FINISHED_JOBS = 200_000
HISTORY_WORKERS = 50  # each with thousands of jobs behind them
APPLICANTS = ["worker:history-1", "worker:history-2", "worker:history-3"]


def _load(conn: db.Connection) -> None:
    """30 days of finished jobs (cancelled: no photos to make up), each created (version 1)
    and taken (version 2, its first fill) by one of a few workers; one in five then given back
    and one in five reopened when the lease ran out (version 3); offers and unfilled rounds."""
    conn.execute(
        """
        INSERT INTO jobs (business_id, status, lat, lng, window_start, window_end,
                          created_at, updated_at)
        SELECT 'business:history', 'cancelled', 52.5, 13.4,
               at - interval '1 hour', at + interval '1 hour', at, at + interval '10 minutes'
          FROM generate_series(1, %(n)s) i,
               LATERAL (SELECT now() - interval '30 days' * i / %(n)s
                               - interval '2 hours' AS at) t
        """,
        {"n": FINISHED_JOBS},
    )
    conn.execute(
        """
        WITH numbered AS (
            SELECT id, created_at, row_number() OVER (ORDER BY id) AS i FROM jobs
        ), worker AS (
            SELECT id, created_at, i, 'worker:history-' || (i / 10 %% %(workers)s) AS w
              FROM numbered
        )
        INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
        SELECT id, 'job.created', 1, 'business:history', created_at, '{}' FROM worker
        UNION ALL
        SELECT id, 'job.assigned', 2, w, created_at + interval '1 minute',
               jsonb_build_object('assignee_id', w) FROM worker
        UNION ALL
        SELECT id, CASE WHEN i %% 10 < 2 THEN 'job.released' ELSE 'job.reopened' END, 3,
               CASE WHEN i %% 10 < 2 THEN w ELSE 'system:lease-sweeper' END,
               created_at + interval '5 minutes', '{}'
          FROM worker WHERE i %% 10 < 4
        """,
        {"workers": HISTORY_WORKERS},
    )
    conn.execute(
        """
        INSERT INTO offer_events (job_id, type, version, occurred_at, published_at, data)
        SELECT id, 'offer.created', 1, created_at, created_at, '{}'::jsonb FROM jobs
        UNION ALL
        SELECT id, 'job.unfilled', 1, created_at + interval '30 minutes',
               created_at + interval '30 minutes', '{"waves": 3, "offered": 1}'
          FROM jobs WHERE random() < 0.25
        """
    )
    conn.execute("UPDATE job_events SET published_at = occurred_at")
    conn.execute("VACUUM ANALYZE")


@pytest.fixture(scope="module")
def history(admin_url: str) -> Iterator[str]:
    url = create_database(admin_url)
    try:
        with db.connect(url) as conn:
            _load(conn)
        yield url
    finally:
        # Dropped without conftest's event check: the history is made up, not the product's.
        name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def big(history: str) -> Iterator[db.Connection]:
    """The history, each test's own rows rolled back after it."""
    with db.connect(history) as conn, conn.transaction(force_rollback=True):
        yield conn


def _leases_run_out(conn: db.Connection, n: int) -> None:
    """n assigned jobs whose lease ran out, written after the ANALYZE: the planner expects
    next to none, as it does when a burst of leases runs out between two autovacuums."""
    conn.execute(
        """
        INSERT INTO jobs (business_id, status, assignee_id, lat, lng, window_start, window_end,
                          lease_expires_at)
        SELECT 'business:now', 'assigned', 'worker:held-' || i, 52.5, 13.4,
               now() - interval '1 hour', now() + interval '1 hour', now() - interval '1 minute'
          FROM generate_series(1, %(n)s) i
        """,
        {"n": n},
    )


def _windows_end(conn: db.Connection, n: int) -> None:
    conn.execute(
        """
        INSERT INTO jobs (business_id, status, lat, lng, window_start, window_end)
        SELECT 'business:now', 'open', 52.5, 13.4,
               now() - interval '2 hours', now() - interval '1 minute'
          FROM generate_series(1, %(n)s) i
        """,
        {"n": n},
    )


def _count(conn: db.Connection, query: Any) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(row["n"])


def test_a_reopen_batch_is_its_size_whatever_the_table_holds(big: db.Connection) -> None:
    _leases_run_out(big, 300)
    assert len(commands.reopen_expired(big, 100)) == 100
    assert _count(big, "SELECT count(*) AS n FROM jobs WHERE status = 'assigned'") == 200
    reopened = """SELECT count(*) AS n FROM job_events e JOIN jobs j ON j.id = e.job_id
                   WHERE j.business_id = 'business:now' AND e.type = 'job.reopened'"""
    assert _count(big, reopened) == 100


def test_an_expire_batch_is_its_size_whatever_the_table_holds(big: db.Connection) -> None:
    _windows_end(big, 300)
    assert len(commands.expire_ended(big, 100)) == 100
    assert _count(big, "SELECT count(*) AS n FROM jobs WHERE status = 'expired'") == 100


# -- plans: each statement reads what it shows, not the history behind it -------------------

HISTORY_TABLES = {"jobs", "job_events", "offer_events", "job_offers"}


def _plan(conn: db.Connection, statement: str, params: dict[str, Any] | None = None) -> Any:
    row = conn.execute(
        f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}",
        params or {},
    ).fetchone()
    assert row is not None
    return row["QUERY PLAN"][0]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _reads_only_what_it_shows(plan: Any, buffers: int) -> None:
    """No sequential scan of a table that grows with history, and a bound on the pages read
    (hit or not: deterministic for a given plan and data) far below one such scan."""
    root = plan["Plan"]
    scans = [
        n["Relation Name"]
        for n in _nodes(root)
        if n["Node Type"] == "Seq Scan" and n.get("Relation Name") in HISTORY_TABLES
    ]
    assert scans == [], plan
    read = root["Shared Hit Blocks"] + root["Shared Read Blocks"]
    assert read <= buffers, (read, plan)


def _choice_job_with_applicants(conn: db.Connection) -> Any:
    row = conn.execute(
        """
        INSERT INTO jobs (business_id, lat, lng, window_start, window_end, assignment,
                          auto_pick, choose_within_s, choose_by)
        VALUES ('business:now', 52.5, 13.4, now(), now() + interval '3 hours',
                'business_choice', true, 60, now() - interval '1 second')
        RETURNING id
        """
    ).fetchone()
    assert row is not None
    for worker_id in APPLICANTS:
        conn.execute(
            "INSERT INTO workers (id, skills) VALUES (%s, '{}') ON CONFLICT DO NOTHING",
            (worker_id,),
        )
        conn.execute(
            "INSERT INTO job_applications (job_id, worker_id) VALUES (%s, %s)",
            (row["id"], worker_id),
        )
    return row["id"]


def test_the_applicant_list_reads_each_applicants_record_not_their_history(
    big: db.Connection,
) -> None:
    job_id = _choice_job_with_applicants(big)
    listed = big.execute(
        choice_sql.APPLICANTS.sql,
        {"job_id": job_id, "position_ids": [], "lats": [], "lngs": []},
    ).fetchall()
    records = {
        r["document"]["worker_id"]: (r["document"]["released"], r["document"]["vanished"])
        for r in listed
    }
    # 4,000 jobs each: 800 given back, 800 reopened on them (the recount, kept by triggers)
    assert records == {w: (800, 800) for w in APPLICANTS}
    plan = _plan(
        big,
        choice_sql.APPLICANTS.sql,
        {"job_id": job_id, "position_ids": [], "lats": [], "lngs": []},
    )
    _reads_only_what_it_shows(plan, buffers=200)


def test_the_auto_pick_ranks_by_records_not_history(big: db.Connection) -> None:
    job_id = _choice_job_with_applicants(big)
    plan = _plan(big, choice_sql.BEST_APPLICANT.sql, {"job_id": job_id})
    _reads_only_what_it_shows(plan, buffers=200)


def test_the_summary_reads_the_live_market_and_the_last_hour_only(big: db.Connection) -> None:
    _leases_run_out(big, 3)
    big.execute(
        """
        INSERT INTO job_events (job_id, type, version, actor, data)
        SELECT id, 'job.assigned', 2, assignee_id, jsonb_build_object('assignee_id', assignee_id)
          FROM jobs WHERE status = 'assigned'
        """
    )
    assert {r["status"]: r["n"] for r in big.execute(ops_sql.JOBS_BY_STATUS.sql).fetchall()} == {
        "assigned": 3
    }  # the 200,000 cancelled long ago are history, not the market
    hour = big.execute(ops_sql.LAST_HOUR.sql).fetchone()
    assert hour is not None and (hour["filled"], hour["unfilled"]) == (3, 0)
    _reads_only_what_it_shows(_plan(big, ops_sql.JOBS_BY_STATUS.sql), buffers=50)
    _reads_only_what_it_shows(_plan(big, ops_sql.LAST_HOUR.sql), buffers=100)
