import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dispatch import db, migrations
from dispatch.jobs.sql import ACCEPT_JOB
from dispatch_local import REPO_ROOT
from tests.conftest import create_database, drop_database


@pytest.fixture
def empty_database(admin_url: str) -> Iterator[str]:
    url = create_database(admin_url, migrate=False)
    yield url
    drop_database(admin_url, url)


def applied(url: str) -> list[str]:
    with db.connect(url) as conn:
        return [r["version"] for r in conn.execute("SELECT version FROM schema_migrations")]


def test_applied_in_order_each_once(empty_database: str) -> None:
    everything = migrations.load(REPO_ROOT / "migrations")
    assert everything, "no migrations found"
    assert [m.version for m in everything] == sorted(m.version for m in everything)
    with db.connect(empty_database) as conn:
        assert migrations.apply(conn, everything) == [m.version for m in everything]
        assert migrations.apply(conn, everything) == []
    assert applied(empty_database) == [m.version for m in everything]


def test_two_migrators_started_together(empty_database: str) -> None:
    everything = migrations.load(REPO_ROOT / "migrations")
    barrier = threading.Barrier(2)
    results: list[list[str]] = []
    failures: list[BaseException] = []

    def migrate() -> None:
        with db.connect(empty_database) as conn:
            barrier.wait()
            try:
                results.append(migrations.apply(conn, everything))
            except BaseException as error:
                failures.append(error)

    threads = [threading.Thread(target=migrate) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    # One did all the work, the other found nothing pending.
    assert sorted(results, key=len) == [[], [m.version for m in everything]]
    assert applied(empty_database) == [m.version for m in everything]


def test_an_applied_migration_that_changed_is_refused(empty_database: str, tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE one (id int);")
    with db.connect(empty_database) as conn:
        migrations.apply(conn, migrations.load(tmp_path))
        (tmp_path / "0001_first.sql").write_text("CREATE TABLE one (id bigint);")
        with pytest.raises(migrations.MigrationChanged):
            migrations.apply(conn, migrations.load(tmp_path))


def test_a_failing_migration_leaves_nothing_behind(empty_database: str, tmp_path: Path) -> None:
    (tmp_path / "0001_good.sql").write_text("CREATE TABLE good (id int);")
    (tmp_path / "0002_bad.sql").write_text("CREATE TABLE bad (id nonsense_type);")
    with db.connect(empty_database) as conn:
        with pytest.raises(Exception, match="nonsense_type"):
            migrations.apply(conn, migrations.load(tmp_path))
        assert conn.execute("SELECT to_regclass('good') AS t").fetchone() == {"t": None}


FUNCTIONS = """
SELECT p.oid::regprocedure::text AS signature, obj_description(p.oid, 'pg_proc') AS checksum
  FROM pg_proc p WHERE proname LIKE 'dispatch_accept_job%' ORDER BY 1
"""


def test_the_functions_made_from_the_code_are_the_codes_and_replaced_when_it_changes(
    empty_database: str,
) -> None:
    """The accept runs as functions written from its statement (dispatch.outbox.sql.kept_planned):
    every apply leaves exactly the code's, and replaces one whose text is not the code's."""
    everything = migrations.load(REPO_ROOT / "migrations")
    wanted = sorted((f.name, f.checksum) for f in ACCEPT_JOB.functions)
    with db.connect(empty_database) as conn:
        migrations.apply(conn, everything)
        made = conn.execute(FUNCTIONS).fetchall()
        assert sorted((r["signature"].split("(")[0], r["checksum"]) for r in made) == wanted
        # An older text under another signature (a parameter since removed), and a hand edit.
        conn.execute(
            "CREATE FUNCTION dispatch_accept_job(gone integer) RETURNS TABLE (document json, "
            "answer text) LANGUAGE sql AS $$ SELECT NULL::json, 'stale' $$"
        )
        conn.execute("COMMENT ON FUNCTION dispatch_accept_job_keyed IS 'edited by hand'")
        assert migrations.apply(conn, everything) == []
        again = conn.execute(FUNCTIONS).fetchall()
        assert sorted((r["signature"].split("(")[0], r["checksum"]) for r in again) == wanted
        assert [r["signature"] for r in again] == [r["signature"] for r in made]
