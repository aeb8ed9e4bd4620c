"""The application role (dispatch_app), bypassing the application: what it may not do, it
cannot, and its timeouts are its own settings, which hold through a transaction pooler."""

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import errors

from dispatch import db, roles
from dispatch_local.services import app_url
from tests.conftest import AWS_PATH, create_database, drop_database

# Each statement is one the functions never make; the database refuses it to the role.
REFUSED = [
    "DROP TABLE jobs CASCADE",
    "ALTER TABLE jobs ADD COLUMN sneaky integer",
    "ALTER TABLE job_events DROP CONSTRAINT job_events_one_per_change",
    "TRUNCATE jobs CASCADE",
    "TRUNCATE job_events CASCADE",
    "CREATE TABLE sneaky (id integer)",
    "CREATE INDEX sneaky ON jobs (business_id)",
    "CREATE FUNCTION sneaky() RETURNS integer LANGUAGE sql AS 'SELECT 1'",
    "DROP FUNCTION dispatch_job_json(jobs) CASCADE",
    "DROP TRIGGER jobs_photo_slots_frozen ON jobs",
    # The audit trail is appended to and marked delivered, never rewritten or removed.
    "DELETE FROM job_events",
    "UPDATE job_events SET data = '{}'",
    "UPDATE job_events SET type = 'job.created', version = 1",
    # A posted job's owner, place, skills and window never change; jobs are never deleted.
    "DELETE FROM jobs",
    "UPDATE jobs SET business_id = 'someone-else'",
    "UPDATE jobs SET lat = 0, lng = 0",
    "UPDATE jobs SET skills = '{}'",
    "UPDATE jobs SET window_end = now() + interval '1 year'",
    "UPDATE jobs SET min_rating = NULL",
    "DELETE FROM workers",
    "UPDATE workers SET id = 'someone-else'",
    "DELETE FROM photos",
    "UPDATE photos SET owner_id = 'someone-else'",
    "DELETE FROM job_offers",
    "DELETE FROM job_declines",
    "DELETE FROM job_races_lost",
    "UPDATE job_races_lost SET lost_at = now()",
    "UPDATE offer_events SET data = '{}'",
    # The market's curve is refit in place, never removed (the policy would fall back unseen).
    "DELETE FROM offer_market",
    # The folded answers are added to and decayed, never removed: a removed record would be
    # taken for a new worker's, and a removed cursor would fold a day of offers again.
    "DELETE FROM offer_market_bands",
    "DELETE FROM worker_answers",
    "DELETE FROM offer_answers_folded",
    # A worker's record moves only with the facts it counts (worker_records_kept_by_history).
    "INSERT INTO worker_records (worker_id, completed) VALUES ('sneaky', 100)",
    "UPDATE worker_records SET released = 0, vanished = 0",
    "DELETE FROM worker_records",
    "SELECT worker_records_add('sneaky', 100, 0, 0)",
    "INSERT INTO schema_migrations (version, checksum) VALUES ('9999_sneaky', 'x')",
    "DELETE FROM schema_migrations",
]


@pytest.fixture
def as_app(conn: db.Connection, database_url: str) -> Iterator[db.Connection]:
    with db.connect(app_url(database_url)) as app:
        assert app.execute("SELECT current_user AS who").fetchone() == {"who": roles.APP_ROLE}
        yield app


@pytest.mark.parametrize("statement", REFUSED)
def test_the_application_role_is_refused(as_app: db.Connection, statement: str) -> None:
    with pytest.raises(errors.InsufficientPrivilege):
        as_app.execute(statement)


def test_the_owner_may_do_what_the_role_may_not(conn: db.Connection) -> None:
    """The refusals above are the role's, not a broken statement: the owner runs them."""
    for statement in REFUSED:
        with conn.transaction(force_rollback=True):
            conn.execute(statement)


def test_its_timeouts_are_the_roles_own_settings(conn: db.Connection) -> None:
    assert roles.timeouts_of(conn) == {"statement_timeout": "5000ms", "lock_timeout": "2000ms"}


@pytest.fixture
def strict_database(admin_url: str) -> Iterator[str]:
    """A database of its own whose role settings are strict (short timeouts), so that every
    connection to it, pooled or not, is a new one that starts with them."""
    url = create_database(admin_url)
    with db.connect(url) as owner:
        roles.configure(owner, statement_timeout_ms=300, lock_timeout_ms=200)
    yield url
    drop_database(admin_url, url)


def test_a_statement_or_lock_wait_past_the_limit_is_cancelled_on_the_handlers_path(
    strict_database: str,
) -> None:
    """On the path the handlers take (in the AWS-path tier: through PgBouncer in transaction
    pooling, which refuses startup options as RDS Proxy does): no option and no SET, and the
    limits hold for every transaction."""
    with db.connect(app_url(strict_database)) as app:
        with pytest.raises(errors.QueryCanceled):
            app.execute("SELECT pg_sleep(3)")
        for _ in range(3):  # transaction after transaction, whichever server connection
            with pytest.raises(errors.QueryCanceled), app.transaction():
                app.execute("SELECT pg_sleep(3)")
        with db.connect(strict_database) as owner, owner.transaction():
            owner.execute("LOCK TABLE workers IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(errors.LockNotAvailable):
                app.execute("SELECT count(*) FROM workers")


def test_startup_options_are_refused_through_the_pooler_and_taken_directly(
    database_url: str,
) -> None:
    """What the handlers must never send: in the AWS-path tier the pooler refuses it (so this
    tier proves the handlers send none); connected directly, Postgres takes it."""

    def attempt() -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(app_url(database_url), options="-c lock_timeout=1")

    if AWS_PATH:
        with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter"):
            attempt()
    else:
        with attempt() as direct:
            assert direct.execute("SHOW lock_timeout").fetchone() == ("1ms",)
