"""Who may hold a job is written once: dispatch_holding (migration 0049).

Every path that asks reads it (the accept, the assign, the apply, the auto-pick, the applicant
list, the offers' candidates, nearby), and the failure reads name their causes from it. Proven
from the outside: the failure reads return exactly the causes the rules name, and a change of
the one definition changes every path at once.
"""

import re
from typing import Any

import psycopg

from dispatch.choice import sql as choice_sql
from dispatch.choice.rules import APPLY_REFUSALS, ASSIGN_REFUSALS
from dispatch.db import Connection
from dispatch.idempotency import NO_KEY
from dispatch.jobs import sql as jobs_sql
from dispatch.jobs.rules import ACCEPT_CAUSES
from dispatch.offers import sql as offers_sql
from dispatch_local import REPO_ROOT

LAYER = REPO_ROOT / "shared" / "dispatch"
WORKER, APPLIED = "w-hold", "w-applied"
KEY = {"principal": WORKER, "key": "k", "fingerprint": "f", "answer_status": 200}


def one_job(conn: Connection, assignment: str) -> Any:
    choice = assignment == "business_choice"
    row = conn.execute(
        """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end,
                             assignment, auto_pick, choose_within_s, choose_by)
           VALUES ('biz', 12.97, 77.59, '{wash}', now(), now() + interval '2 hours', %s,
                   %s, %s, now() + make_interval(secs => %s))
           RETURNING id""",
        (assignment, False if choice else None, *[3600 if choice else None] * 2),
    ).fetchone()
    assert row is not None
    return row["id"]


def test_the_failure_reads_return_the_causes_the_rules_name(conn: Connection) -> None:
    first_come, choice = one_job(conn, "first_come"), one_job(conn, "business_choice")
    params = {"worker_id": WORKER, "version": None, "business_id": "biz"}
    reads = (
        (jobs_sql.ACCEPT_FAILURE_FACTS.sql, first_come, {"status", "assignee_id"}, ACCEPT_CAUSES),
        (choice_sql.ASSIGN_FAILURE_FACTS.sql, choice, {"status", "assignee_id"}, ASSIGN_REFUSALS),
        (choice_sql.APPLY_FAILURE_FACTS.sql, choice, {"status"}, APPLY_REFUSALS),
    )
    for statement, job_id, state, causes in reads:
        row = conn.execute(statement, {**params, "job_id": job_id}).fetchone()
        assert row is not None
        assert set(row) - state == set(causes), statement


def test_no_path_spells_a_cause_of_its_own() -> None:
    """The causes are written in migration 0049 alone: no statement of the layer looks up a
    worker's skills, rating, blocks or live jobs by itself for a claim (the rosters and ops
    modules read them for their own ends)."""
    spelled = ("r.list = 'blocked'", "skills <@", "min_rating <=", "live.assignee_id")
    found = {
        str(path.relative_to(LAYER)): [s for s in spelled if s in path.read_text()]
        for path in sorted(LAYER.rglob("*.py"))
    }
    assert {path: s for path, s in found.items() if s} == {}
    for statement in (
        choice_sql.ASSIGN_JOB.sql,
        choice_sql.APPLY.sql,
        choice_sql.ASSIGN_FAILURE_FACTS.sql,
        choice_sql.APPLY_FAILURE_FACTS.sql,
        choice_sql.APPLICANTS.sql,
        choice_sql.BEST_APPLICANT.sql,
        jobs_sql.ACCEPT_FAILURE_FACTS.sql,
    ):
        assert "dispatch_holding(j, " in statement, statement
    # The offers' candidates: dispatch_offerable (migration 0054), whose rule is may_hold.
    for statement in (offers_sql.MAKE_OFFERS.sql, offers_sql.LIKELY_CANDIDATES.sql):
        assert "dispatch_offerable(" in statement, statement
    offerable = (REPO_ROOT / "migrations" / "0054_offer_rules.sql").read_text()
    assert "dispatch_holding(j, c.worker_id) h\n WHERE h.may_hold" in offerable


def test_free_is_read_from_the_one_set_of_live_statuses(conn: Connection) -> None:
    """dispatch_holding's worker_free asks dispatch_live (migration 0053), whose set
    test_one_source holds to the models', rather than spelling the statuses again."""
    row = conn.execute("SELECT pg_get_functiondef('dispatch_holding'::regproc) AS d").fetchone()
    assert row is not None
    assert "dispatch_live(live.status)" in row["d"]
    assert "'in_progress'" not in row["d"]


def every_path(conn: Connection, first_come: Any, choice: Any) -> dict[str, bool]:
    """Whether each path lets WORKER hold (or see, or be offered) a job, changing nothing."""
    seen: dict[str, bool] = {}
    near = {"lat": 12.97, "lng": 77.59, "radius_m": 5000.0, "worker_id": WORKER, "limit": 10}
    seen["nearby"] = any(
        r["document"]["id"] == str(first_come)
        for r in conn.execute(jobs_sql.NEARBY_JOBS.sql, near).fetchall()
    )
    offer = {
        "job_id": first_come, "version": 1, "worker_ids": [WORKER], "distances": [700.0],
        "skills": ["wash"], "min_rating": None, "pool": 24, "recent": 12, "history_s": 86400,
        "silence_s": 60, "settle_s": 60, "half_m": 2500.0, "door": 0.6, "min_answers": 200,
        "tie_band_m": 500.0, "size": 5, "wave": 1, "radius_m": 5000.0,
    }  # fmt: skip
    candidates = conn.execute(offers_sql.LIKELY_CANDIDATES.sql, offer).fetchall()
    seen["likely's candidates"] = bool(candidates)
    listed = conn.execute(
        choice_sql.APPLICANTS.sql,
        {"job_id": choice, "position_ids": [], "lats": [], "lngs": []},
    ).fetchall()
    seen["applicant list"] = [r["document"]["qualified"] for r in listed] == [True]
    best = conn.execute(choice_sql.BEST_APPLICANT.sql, {"job_id": choice}).fetchone()
    seen["auto-pick"] = best is not None and best["worker_id"] == WORKER
    change = {"lease_seconds": 600, "event_type": "job.assigned", "actor": WORKER, "version": None}
    for path, statement, params in (
        ("nearest's offers", offers_sql.MAKE_OFFERS.sql, offer),
        ("accept", jobs_sql.ACCEPT_JOB.sql, {"job_id": first_come, "worker_id": WORKER, **KEY}),
        (
            "assign",
            choice_sql.ASSIGN_JOB.sql,
            {"job_id": choice, "worker_id": WORKER, "business_id": "biz", **NO_KEY},
        ),
    ):
        with conn.transaction():  # each change undone at once (psycopg.Rollback)
            seen[path] = bool(conn.execute(statement, {**change, **params}).fetchall())
            raise psycopg.Rollback()
    with conn.transaction():
        apply = {"job_id": choice, "worker_id": APPLIED, "note": None, **NO_KEY}
        row = conn.execute(choice_sql.APPLY.sql, apply).fetchone()
        seen["apply"] = row is not None and row["allowed"]
        raise psycopg.Rollback()
    return seen


def test_changing_the_definition_changes_every_path(conn: Connection) -> None:
    """One cause made false in dispatch_holding alone (has_skills), and every path refuses:
    none of them kept a copy of its own."""
    conn.execute(
        "INSERT INTO workers (id, skills) VALUES (%s, '{wash}'), (%s, '{wash}')",
        (WORKER, APPLIED),
    )
    first_come, choice = one_job(conn, "first_come"), one_job(conn, "business_choice")
    conn.execute(
        "INSERT INTO job_applications (job_id, worker_id) VALUES (%s, %s)", (choice, WORKER)
    )
    paths = every_path(conn, first_come, choice)
    assert paths == dict.fromkeys(paths, True)
    assert len(paths) == 8

    row = conn.execute("SELECT pg_get_functiondef('dispatch_holding'::regproc) AS d").fetchone()
    assert row is not None
    cause = "j.skills <@ coalesce("
    assert row["d"].count(cause) == 1
    with conn.transaction():
        conn.execute(row["d"].replace(cause, "false AND " + cause).encode())
        assert every_path(conn, first_come, choice) == dict.fromkeys(paths, False)
        raise psycopg.Rollback()
    assert every_path(conn, first_come, choice) == paths  # the definition is back


MAKES_HOLDING = re.compile(r"CREATE (?:OR REPLACE )?FUNCTION dispatch_holding\(")


def test_the_definition_is_made_once_and_only_replaced_whole() -> None:
    """0049 makes it; a later rule is a migration that replaces it whole (CREATE OR REPLACE:
    one function in force, read whole in migrations/schema.sql), never a second one."""
    made = {
        path.name: re.findall(
            r"CREATE (?:OR REPLACE )?FUNCTION dispatch_holding\(", path.read_text()
        )
        for path in sorted((REPO_ROOT / "migrations").glob("[0-9]*.sql"))
    }
    made = {name: found for name, found in made.items() if found}
    assert made == {
        "0049_who_may_hold.sql": ["CREATE FUNCTION dispatch_holding("],
        "0053_job_statuses.sql": ["CREATE OR REPLACE FUNCTION dispatch_holding("],
    }
