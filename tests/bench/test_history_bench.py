"""The history benchmark, small, so it never rots: its loader still fits the schema (one day,
through every constraint and trigger, its events valid against the AsyncAPI document), every
named statement is timed or excluded with a reason, and a one-day run reports every path. No
timing is asserted here."""

import re
import uuid

import psycopg

from bench import history, history_load
from dispatch import db
from tests.contract import validate_stored_events

# Tables the product writes that the loader leaves to the product: their size is not history's
# (sweep_duties: a row per scheduled duty of the sweeper).
NOT_LOADED = {"schema_migrations", "sweep_duties"}


def test_a_day_of_history_fills_every_table_as_the_product_does(bench_url: str) -> None:
    history_load.load(bench_url, days=1, jobs_per_day=300)
    with db.connect(bench_url) as conn:
        tables = [
            r["tablename"]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
        ]
        empty = [
            t
            for t in tables
            if t not in NOT_LOADED
            and conn.execute(f"SELECT count(*) AS n FROM {t}").fetchone() == {"n": 0}
        ]
        assert empty == []
        # Every story of the mix is there (a share drawn once for all jobs would leave one).
        stories = {t for types in history_load.STORIES.values() for t in types}
        found = conn.execute("SELECT array_agg(DISTINCT type) AS types FROM job_events").fetchone()
        assert found is not None and set(found["types"]) == stories
        statuses = conn.execute(
            "SELECT array_agg(DISTINCT status) AS s FROM jobs WHERE version > 4 OR status <> 'open'"
        ).fetchone()
        assert statuses is not None and set(history_load.FINAL.values()) <= set(statuses["s"])
        # A job's events are its versions, one each, and the last is the job as it stands.
        assert conn.execute("""
            SELECT count(*) AS n FROM jobs j
             WHERE (SELECT count(*) FROM job_events e WHERE e.job_id = j.id) <> j.version
                OR (SELECT e.data ->> 'status' FROM job_events e
                     WHERE e.job_id = j.id AND e.version = j.version) <> j.status
        """).fetchone() == {"n": 0}
        # Past rows carry their own time in their ids (the console reads the last hour by id).
        assert conn.execute("""
            SELECT count(*) AS n FROM job_events
             WHERE id >= dispatch_uuid7_floor(now() - interval '1 hour')
               AND occurred_at < now() - interval '3 hours'
        """).fetchone() == {"n": 0}
        assert validate_stored_events(conn) > 300 * 2


def test_every_named_statement_is_timed_or_excluded_with_a_reason() -> None:
    named = set(history.named_statements())
    assert named - set(history.CASES) - set(history.EXCLUDED) == set()
    assert set(history.CASES) - named == set()  # no case for a statement that is gone
    assert set(history.EXCLUDED) - named == set()
    assert set(history.CASES) & set(history.EXCLUDED) == set()
    assert all(reason for reason in history.EXCLUDED.values())


def test_a_one_day_run_reports_every_path_with_its_ratio_buffers_and_the_worst(
    admin_url: str, aws_stand_in: str
) -> None:
    prefix = f"dispatch_bench_t{uuid.uuid4().hex[:8]}"
    try:
        result = history.measure(admin_url, days=1, jobs_per_day=200, runs=1, prefix=prefix)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for name in (f"{prefix}_empty", f"{prefix}_history_1_200"):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert [p.name for p in result.paths] == [*history.CASES, history.SWEEP]
    assert all(p.empty_ms > 0 and p.history_ms > 0 for p in result.paths)
    assert all(
        p.empty_buffers is not None and p.history_buffers is not None
        for p in result.paths
        if p.name != history.SWEEP
    )
    assert len(result.plans) == 3
    assert all("Execution Time" in plan for plan in result.plans.values())
    text = history.report(result)
    assert "| choice.sql.APPLICANTS |" in text
    assert re.fullmatch(r"worst path at 1 days: \d+\.\d x empty \(.+\)", text.splitlines()[-1]), (
        text.splitlines()[-1]
    )


def test_a_history_database_at_an_older_schema_is_migrated_not_reloaded(admin_url: str) -> None:
    prefix = f"dispatch_bench_m{uuid.uuid4().hex[:8]}"
    name = f"{prefix}_history_1_50"
    said: list[str] = []
    try:
        url = history._history(admin_url, 1, 50, said.append, prefix)
        with db.connect(url) as conn:
            conn.execute("INSERT INTO workers (id) VALUES ('w-left-by-the-first-load')")
            conn.commit()
        loaded = history._exists(admin_url, name)
        assert loaded is not None and f"schema={history.schema_version()}" in loaded
        older = loaded.replace(history.schema_version(), "0001_older")
        history._comment(admin_url, name, older)
        said.clear()
        assert history._history(admin_url, 1, 50, said.append, prefix) == url
        assert [line.split(":")[1].split()[0] for line in said[:3]] == [
            "migrating",
            "migrated",
            "reused",
        ]
        assert history._exists(admin_url, name) == loaded
        with db.connect(url) as conn:
            kept = conn.execute(
                "SELECT count(*) AS n FROM workers WHERE id = 'w-left-by-the-first-load'"
            ).fetchone()
        assert kept == {"n": 1}  # the rows stayed: migrated in place, not loaded anew
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
