import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dispatch import db, migrations
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
SELECT p.oid::regprocedure::text AS signature FROM pg_proc p
 WHERE proname IN ('dispatch_accept_job', 'dispatch_accept_job_keyed', 'dispatch_holding')
 ORDER BY 1
"""


def test_the_accept_is_the_migrations_function_and_an_apply_leaves_it_alone(
    empty_database: str,
) -> None:
    """The accept (migration 0052, keyed or not) and who may hold a job (0049) are ordinary
    functions of the migrations, one of each (no overload left behind by an older signature,
    no keyed copy of the accept); a later apply writes nothing."""
    everything = migrations.load(REPO_ROOT / "migrations")
    with db.connect(empty_database) as conn:
        migrations.apply(conn, everything)
        made = [r["signature"].split("(")[0] for r in conn.execute(FUNCTIONS).fetchall()]
        assert made == ["dispatch_accept_job", "dispatch_holding"]
        assert migrations.apply(conn, everything) == []
        again = [r["signature"].split("(")[0] for r in conn.execute(FUNCTIONS).fetchall()]
        assert again == made


def test_the_one_market_curve_and_its_bands_become_the_deployments(empty_database: str) -> None:
    """Migration 0058 (a curve per area): the curve there was, and the bands folded before
    areas, are kept under area -1, the deployment's (whose curve they count in, and no
    area's)."""
    everything = migrations.load(REPO_ROOT / "migrations")
    before = [m for m in everything if m.version < "0058"]
    with db.connect(empty_database) as conn:
        migrations.apply(conn, before)
        conn.execute(
            "INSERT INTO offer_market (door, half_distance_m, answers, fitted_at)"
            " VALUES (0.7, 3100, 400, '2026-01-01T00:00:00Z')"
        )
        conn.execute(
            "INSERT INTO offer_market_bands (band, offers, accepts, as_of)"
            " VALUES (2, 10, 6, '2026-01-01T00:00:00Z'), (9, 4, 1, '2026-01-01T00:00:00Z')"
        )
        conn.commit()
        assert migrations.apply(conn, everything)[0] == "0058_market_areas"
        curves = conn.execute(
            "SELECT area, door, half_distance_m, answers, fitted_at FROM offer_market"
        ).fetchall()
        assert [(c["area"], c["door"], c["half_distance_m"], c["answers"]) for c in curves] == [
            (-1, 0.7, 3100, 400)
        ]
        assert curves[0]["fitted_at"].isoformat() == "2026-01-01T00:00:00+00:00"
        bands = conn.execute(
            "SELECT area, band, offers, accepts FROM offer_market_bands ORDER BY band"
        ).fetchall()
        assert [tuple(b.values()) for b in bands] == [(-1, 2, 10, 6), (-1, 9, 4, 1)]
