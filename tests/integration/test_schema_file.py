"""migrations/schema.sql is the schema the migrations make, as `make schema` writes it: a
migration added or changed without running `make schema` fails here."""

from pathlib import Path

import pytest

from dispatch_local import schema


@pytest.fixture(scope="module")
def made() -> str:
    """The schema the migrations make now (a fresh embedded Postgres, its pg_dump)."""
    return schema.dump()


def test_the_schema_file_is_what_the_migrations_make(made: str) -> None:
    assert schema.SCHEMA.read_text() == made, "migrations/schema.sql is stale: run `make schema`"
    assert "CONSTRAINT jobs_lease_within_window" in made  # the newest migrations are in it


def test_a_stale_file_is_told(
    made: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "schema.sql"
    stale.write_text(made.replace("jobs_lease_within_window", "jobs_lease_anywhere"))
    monkeypatch.setattr(schema, "SCHEMA", stale)
    monkeypatch.setattr(schema, "dump", lambda: made)
    monkeypatch.setattr(schema, "REPO_ROOT", tmp_path)
    assert schema.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().out
    stale.write_text(made)
    assert schema.main(["--check"]) == 0


def test_the_file_is_never_applied_as_a_migration() -> None:
    from dispatch import migrations

    loaded = migrations.load(schema.SCHEMA.parent)
    assert loaded and all(m.version[:4].isdigit() for m in loaded)
    assert "schema" not in {m.version for m in loaded}
