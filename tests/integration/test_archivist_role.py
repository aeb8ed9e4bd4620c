"""The archivist (dispatch_archivist, migration 0045), bypassing the application: it may read
and delete the history it retires and nothing else; whoever deletes, an unfinished job and an
event not yet on the bus stay; and the application role still may not delete history."""

from collections.abc import Iterator

import pytest
from psycopg import errors

from dispatch import db, roles
from dispatch_local.services import app_url, archivist_url
from tests.support import Api, make_job, one

# Statements the retention duty never makes; the database refuses them to the archivist.
REFUSED = [
    # It writes nothing: history is deleted whole once archived, never rewritten.
    "INSERT INTO jobs (business_id, lat, lng, window_start, window_end)"
    " VALUES ('b', 0, 0, now(), now() + interval '1 hour')",
    "INSERT INTO job_events (job_id, type, version, actor)"
    " SELECT id, 'job.rated', version + 1, 'x' FROM jobs",
    "UPDATE jobs SET status = 'cancelled'",
    "INSERT INTO job_races_lost (job_id, worker_id) SELECT job_id, worker_id FROM job_offers",
    "UPDATE job_events SET published_at = now()",
    "UPDATE offer_events SET published_at = now()",
    # Live state is not history: workers, rosters, keys, the market, connections.
    "DELETE FROM workers",
    "DELETE FROM rosters",
    "DELETE FROM idempotency_keys",
    "DELETE FROM offer_market",
    "DELETE FROM offer_market_bands",
    "DELETE FROM worker_answers",
    "UPDATE offer_answers_folded SET last_offer_id = NULL",
    "DELETE FROM push_connections",
    "SELECT * FROM idempotency_keys",
    "SELECT * FROM workers",
    # No TRUNCATE (it would skip the guards below) and no DDL.
    "TRUNCATE jobs CASCADE",
    "TRUNCATE job_events",
    "DROP TRIGGER jobs_deleted_only_when_finished ON jobs",
    "ALTER TABLE jobs DISABLE TRIGGER ALL",
    "CREATE TABLE sneaky (id integer)",
    "DELETE FROM schema_migrations",
]


@pytest.fixture
def as_archivist(conn: db.Connection, database_url: str) -> Iterator[db.Connection]:
    with db.connect(archivist_url(database_url)) as archivist:
        assert archivist.execute("SELECT current_user AS who").fetchone() == {
            "who": roles.ARCHIVIST_ROLE
        }
        yield archivist


@pytest.mark.parametrize("statement", REFUSED)
def test_the_archivist_is_refused(as_archivist: db.Connection, statement: str) -> None:
    with pytest.raises(errors.InsufficientPrivilege):
        as_archivist.execute(statement)


def test_the_owner_may_do_what_the_archivist_may_not(conn: db.Connection) -> None:
    """The refusals above are the role's, not a broken statement: the owner runs them."""
    for statement in REFUSED:
        with conn.transaction(force_rollback=True):
            conn.execute(statement)


def test_the_application_role_still_may_not_delete_history(
    api: Api, conn: db.Connection, database_url: str
) -> None:
    job = make_job(api)
    with db.connect(app_url(database_url)) as app:
        for table in ("jobs", "job_events", "offer_events", "job_offers", "offer_waves",
                      "job_declines", "job_races_lost", "job_applications",
                      "photos"):  # fmt: skip
            with pytest.raises(errors.InsufficientPrivilege):
                app.execute(f"DELETE FROM {table}")
    assert one(conn, "SELECT count(*) AS n FROM jobs WHERE id = %s", (job["id"],))["n"] == 1


@pytest.mark.parametrize("as_owner", [False, True], ids=["archivist", "owner"])
def test_an_unfinished_job_and_an_unpublished_event_never_leave(
    api: Api, conn: db.Connection, database_url: str, as_owner: bool
) -> None:
    """jobs_deleted_only_when_finished, job_events_deleted_only_when_published and
    offer_events_deleted_only_when_published hold for whoever deletes, the owner included."""
    job = make_job(api)  # open, its job.created not yet on the bus
    conn.execute(
        """INSERT INTO offer_events (job_id, type, version, data)
           VALUES (%s, 'job.unfilled', 1, '{"waves": 0, "offered": 0}')""",
        (job["id"],),
    )
    url = database_url if as_owner else archivist_url(database_url)
    with db.connect(url) as who:
        for statement, guard in (
            ("DELETE FROM job_events WHERE job_id = %s", "job_events_deleted_only_when_published"),
            ("DELETE FROM offer_events WHERE job_id = %s",
             "offer_events_deleted_only_when_published"),
        ):  # fmt: skip
            with pytest.raises(errors.CheckViolation) as refused:
                who.execute(statement, (job["id"],))
            assert refused.value.diag.constraint_name == guard
        conn.execute("UPDATE job_events SET published_at = now() WHERE job_id = %s", (job["id"],))
        conn.execute("UPDATE offer_events SET published_at = now() WHERE job_id = %s", (job["id"],))
        # Its events on the bus now: they may go; the open job may not.
        with who.transaction(force_rollback=True):
            assert who.execute("DELETE FROM job_events WHERE job_id = %s", (job["id"],)).rowcount
            assert who.execute("DELETE FROM offer_events WHERE job_id = %s", (job["id"],)).rowcount
            with pytest.raises(errors.CheckViolation) as refused:
                who.execute("DELETE FROM jobs WHERE id = %s", (job["id"],))
            assert refused.value.diag.constraint_name == "jobs_deleted_only_when_finished"


def test_its_timeouts_are_the_roles_own_settings(conn: db.Connection) -> None:
    assert roles.timeouts_of(conn, roles.ARCHIVIST_ROLE) == {
        "statement_timeout": "5000ms",
        "lock_timeout": "2000ms",
    }
