"""The database roles the functions sign in as: the application role (dispatch_app), what
every function but the migrator and the retention duty signs in as, and the archivist
(dispatch_archivist, migration 0045), what the retention duty signs in as.

Migration 0015 makes it and grants it only what the application uses. Its statement and lock
timeouts are the role's own settings in this database, written here by the migrator (the
schema's owner) at every deploy: no startup `options` (RDS Proxy and PgBouncer refuse them)
and no SET on a connection (a pooler would carry it to another client). Postgres applies a
role's settings to every session that role opens, so they hold however the connection was
made: directly, through RDS Proxy, or through PgBouncer in transaction pooling.
"""

import json
from typing import TypedDict

from psycopg import sql
from pydantic import SecretStr

from dispatch.config.migration import migration_settings
from dispatch.db import Connection, Query

APP_ROLE = "dispatch_app"
ARCHIVIST_ROLE = "dispatch_archivist"


class RoleParams(TypedDict):
    role: str


class Found(TypedDict):
    """Nothing of the row is read: only whether there is one."""


ROLE_EXISTS: Query[RoleParams, Found] = Query("SELECT 1 FROM pg_roles WHERE rolname = %(role)s")


class RoleSettings(TypedDict):
    settings: list[str]


ROLE_SETTINGS: Query[RoleParams, RoleSettings] = Query("""
SELECT coalesce(s.setconfig, '{}') AS settings
  FROM pg_roles r
  LEFT JOIN pg_db_role_setting s
         ON s.setrole = r.oid
        AND s.setdatabase = (SELECT oid FROM pg_database
                              WHERE datname = current_database())
 WHERE r.rolname = %(role)s
""")


def exists(conn: Connection, role: str = APP_ROLE) -> bool:
    return ROLE_EXISTS.one(conn, {"role": role}) is not None


def configure(
    conn: Connection,
    *,
    statement_timeout_ms: int,
    lock_timeout_ms: int,
    password: str | None = None,
    role: str = APP_ROLE,
) -> None:
    """Write the role's timeouts in this database and, when given, its password (hashed here,
    so the plain password is never sent to the server or seen in its logs)."""
    database = conn.info.dbname
    for name, milliseconds in (
        ("statement_timeout", statement_timeout_ms),
        ("lock_timeout", lock_timeout_ms),
    ):
        conn.execute(
            sql.SQL("ALTER ROLE {} IN DATABASE {} SET {} = {}").format(
                sql.Identifier(role),
                sql.Identifier(database),
                sql.Identifier(name),
                sql.Literal(f"{int(milliseconds)}ms"),
            )
        )
    if password is not None:
        hashed = conn.pgconn.encrypt_password(password.encode(), role.encode())
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(hashed.decode())
            )
        )


def app_password() -> str | None:
    """The password the migrator gives the role: the secret RDS Proxy signs in with (AWS), or
    DATABASE_APP_PASSWORD (a local server that asks for passwords); None leaves it as it is."""
    s = migration_settings()
    return _password(s.database_app_secret_arn, s.database_app_password)


def archivist_password() -> str | None:
    """The archivist's, likewise: DATABASE_ARCHIVIST_SECRET_ARN or DATABASE_ARCHIVIST_PASSWORD."""
    s = migration_settings()
    return _password(s.database_archivist_secret_arn, s.database_archivist_password)


def _password(secret_arn: str | None, plain: SecretStr | None) -> str | None:
    if secret_arn:
        from dispatch import aws

        secret = aws.client("secretsmanager").get_secret_value(SecretId=secret_arn)
        return str(json.loads(secret["SecretString"])["password"])
    return plain.get_secret_value() if plain else None


def timeouts_of(conn: Connection, role: str = APP_ROLE) -> dict[str, str]:
    """The role's settings in this database, as Postgres keeps them (for tests and ops)."""
    row = ROLE_SETTINGS.one(conn, {"role": role})
    found = row["settings"] if row else []
    return dict(item.split("=", 1) for item in found)
