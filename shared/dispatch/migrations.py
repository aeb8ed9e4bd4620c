"""Versioned SQL migrations: applied in order, each once, safe when two migrators start together.

Files are named NNNN_name.sql. A transaction-scoped advisory lock serialises migrators (this is
deploy-time bookkeeping, not the claim path); the second one waits, then finds nothing to do.
A file changed after it was applied is refused: history is append-only.
"""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from dispatch.db import Connection

MIGRATOR_LOCK = 0x44697370  # "Disp"

SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     text PRIMARY KEY,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


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
    return [Migration(path.stem, path.read_text()) for path in sorted(directory.glob("*.sql"))]


def apply(conn: Connection, migrations: list[Migration]) -> list[str]:
    """Apply what is pending; returns the versions applied by this call."""
    applied_now: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATOR_LOCK,))
        conn.execute(SCHEMA_MIGRATIONS)
        done = {
            row["version"]: row["checksum"]
            for row in conn.execute("SELECT version, checksum FROM schema_migrations")
        }
        for migration in migrations:
            if migration.version in done:
                if done[migration.version] != migration.checksum:
                    raise MigrationChanged(f"{migration.version} changed after it was applied")
                continue
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)",
                (migration.version, migration.checksum),
            )
            applied_now.append(migration.version)
    return applied_now
