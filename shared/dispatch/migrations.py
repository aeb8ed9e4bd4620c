"""Versioned SQL migrations: applied in order, each once, safe when two migrators start together.

Files are named NNNN_name.sql. A transaction-scoped advisory lock serialises migrators (this is
deploy-time bookkeeping, not the claim path); the second one waits, then finds nothing to do.
A file changed after it was applied is refused: history is append-only.
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from psycopg import errors

from dispatch import roles
from dispatch.config import settings
from dispatch.config.migration import migration_settings
from dispatch.db import Connection, Query
from dispatch.observability import logger

MIGRATOR_LOCK = 0x44697370  # "Disp"

SCHEMA_MIGRATIONS: Query[None, None] = Query("""
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     text PRIMARY KEY,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
""")


class Setting(TypedDict):
    name: str
    value: str


# A timeout of the migrating transaction alone (set_config's `true`: SET LOCAL).
SET_LOCAL: Query[Setting, None] = Query("SELECT set_config(%(name)s, %(value)s, true)")


class Lock(TypedDict):
    lock: int


# Migrators one at a time, until the transaction ends.
TAKE_LOCK: Query[Lock, None] = Query("SELECT pg_advisory_xact_lock(%(lock)s)")


class Applied(TypedDict):
    version: str
    checksum: str


APPLIED: Query[None, Applied] = Query("SELECT version, checksum FROM schema_migrations")
RECORD_APPLIED: Query[Applied, None] = Query(
    "INSERT INTO schema_migrations (version, checksum) VALUES (%(version)s, %(checksum)s)"
)


@dataclass(frozen=True)
class Migration:
    version: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


class MigrationChanged(RuntimeError):
    pass


def load(directory: Path) -> list[Migration]:
    """The migrations in `directory`, in order: the files named NNNN_name.sql (schema.sql
    beside them is the current schema they make, generated, never applied)."""
    return [
        Migration(path.stem, path.read_text())
        for path in sorted(directory.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    ]


def apply(
    conn: Connection,
    migrations: list[Migration],
    lock_timeout_ms: int | None = None,
    statement_timeout_ms: int | None = None,
) -> list[str]:
    """Apply what is pending, then write the application role's settings (dispatch.roles),
    all in one transaction; returns the versions applied by this call. The timeouts given are
    the transaction's own (SET LOCAL): through a pooler nothing outlives it."""
    s = settings()
    applied_now: list[str] = []
    with conn.transaction():
        for name, value in (
            ("lock_timeout", lock_timeout_ms),
            ("statement_timeout", statement_timeout_ms),
        ):
            if value is not None:
                SET_LOCAL.run(conn, {"name": name, "value": str(value)})
        TAKE_LOCK.run(conn, {"lock": MIGRATOR_LOCK})
        SCHEMA_MIGRATIONS.run(conn, None)
        done = {row["version"]: row["checksum"] for row in APPLIED.all(conn, None)}
        for migration in migrations:
            if migration.version in done:
                if done[migration.version] != migration.checksum:
                    raise MigrationChanged(f"{migration.version} changed after it was applied")
                continue
            conn.execute(migration.sql.encode())  # the file, whole: many statements
            RECORD_APPLIED.run(conn, {"version": migration.version, "checksum": migration.checksum})
            applied_now.append(migration.version)
        if roles.exists(conn):  # made by migration 0015
            roles.configure(
                conn,
                statement_timeout_ms=s.statement_timeout_ms,
                lock_timeout_ms=s.lock_timeout_ms,
                password=roles.app_password(),
            )
        if roles.exists(conn, roles.ARCHIVIST_ROLE):  # made by migration 0045
            roles.configure(
                conn,
                statement_timeout_ms=s.statement_timeout_ms,
                lock_timeout_ms=s.lock_timeout_ms,
                password=roles.archivist_password(),
                role=roles.ARCHIVIST_ROLE,
            )
    return applied_now


def apply_patiently(
    connect: Callable[[], Connection],
    migrations: list[Migration],
    deadline: float | None = None,
    connected: Callable[[Connection], None] = lambda conn: None,
) -> list[str]:
    """`apply` with the migrations' own timeouts (not the API's): a short lock timeout, the
    whole attempt retried with a growing pause when a lock is busy, and a long statement
    timeout, cut to what is left before `deadline` (time.monotonic()). `connected` sees each
    connection first (the migrate function hangs it up when time runs out)."""
    s = migration_settings()
    for attempt in range(1, s.migration_attempts + 1):
        left_ms = s.migration_statement_timeout_ms
        if deadline is not None:
            left_ms = min(left_ms, int((deadline - time.monotonic()) * 1000))
        if left_ms <= 0:
            raise TimeoutError("no time left to apply the migrations")
        with connect() as conn:
            connected(conn)
            try:
                return apply(conn, migrations, s.migration_lock_timeout_ms, left_ms)
            except errors.LockNotAvailable:
                if attempt == s.migration_attempts:
                    raise
                logger.warning(
                    "a migration waited too long for a lock; retrying", extra={"attempt": attempt}
                )
        time.sleep(min(0.2 * 2**attempt, 10))
    raise AssertionError("unreachable: the last attempt returns or raises")
