"""One Postgres connection per execution environment, created lazily, rebuilt when dropped.

Lambda runs one request at a time per execution environment, so one connection each is
enough. The local stack runs several "environments" as threads, hence thread-local storage.
Autocommit with explicit `transaction()` blocks keeps every transaction short and visible.
Nothing here relies on session state: in AWS each transaction may run on another server
connection of RDS Proxy (PgBouncer in transaction pooling does the same, and the tests run
through it).
"""

import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, LiteralString, TypedDict, TypeVar, cast

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row

from dispatch.config import settings
from dispatch.snapshots import before_snapshot

Connection = psycopg.Connection[DictRow]
T = TypeVar("T")
P = TypeVar("P", bound=Mapping[str, Any] | None)
R = TypeVar("R")


class Answering(TypedDict):
    """The parameters of a keyed statement's `answered` CTE, which records the caller's
    idempotency key with its answer in the same statement: the key, or all None (no key:
    the statement records nothing; `idempotency.answering`)."""

    principal: str | None
    key: str | None
    fingerprint: str | None
    answer_status: int | None


class Query(Generic[P, R]):
    """A named statement, whole, with the types of its parameters (P, a TypedDict of its
    `%(name)s` placeholders, or None) and of its rows (R, a TypedDict of the columns the code
    reads). A row is the connection's dict (dict_row), so R costs nothing at run time; mypy
    holds every caller to P and R, and tests/integration/test_statement_types.py holds P and R
    to what Postgres itself says of the statement (its parameters, its columns and their
    types), so neither can drift from the SQL."""

    __slots__ = ("sql",)

    def __init__(self, sql: LiteralString) -> None:
        self.sql = sql

    def one(self, conn: Connection, params: P) -> R | None:
        """The first row, or None when the statement matched nothing."""
        return cast("R | None", conn.execute(self.sql, params).fetchone())

    def all(self, conn: Connection, params: P) -> list[R]:
        return cast("list[R]", conn.execute(self.sql, params).fetchall())

    def run(self, conn: Connection, params: P) -> int:
        """Run it for its effect; the number of rows it touched."""
        return conn.execute(self.sql, params).rowcount


_local = threading.local()


def iam_token(url: str) -> str:
    """A 15-minute RDS IAM auth token for the URL's host, port and user (local signing)."""
    import boto3

    info = conninfo_to_dict(url)
    return str(
        boto3.client("rds").generate_db_auth_token(
            DBHostname=info["host"], Port=int(info.get("port") or 5432), DBUsername=info["user"]
        )
    )


def connect(url: str | None = None, **overrides: Any) -> Connection:
    s = settings()
    url = url or s.database_url
    if s.database_iam_auth:
        overrides.setdefault("password", iam_token(url))
    return psycopg.connect(
        url,
        autocommit=True,
        # RDS Proxy pins sessions that use server-side prepared statements.
        prepare_threshold=None,
        row_factory=dict_row,
        connect_timeout=5,
        application_name="dispatch",
        # No `options` (RDS Proxy and PgBouncer refuse the startup parameter) and no SET: the
        # timeouts are the application role's own settings (dispatch.roles), and a pooled
        # server connection must carry nothing of one client's session to the next.
        **overrides,
    )


def connection() -> Connection:
    conn: Connection | None = getattr(_local, "conn", None)
    if conn is None or conn.closed or conn.broken:
        conn = connect()
        _local.conn = conn
    return conn


def run(work: Callable[[Connection], T]) -> T:
    """Run a unit of work; when the connection turns out to be dead, rebuild it and retry once.

    Safe to retry: reads are pure, and every write runs under an idempotency key, so a write
    that did commit before the connection dropped is replayed, not repeated.
    """
    conn = connection()
    try:
        return work(conn)
    except psycopg.OperationalError:
        if not (conn.closed or conn.broken):
            raise
    return work(connection())


@before_snapshot  # a snapshot restored into many environments must hold no connection
def close() -> None:
    conn: Connection | None = getattr(_local, "conn", None)
    if conn is not None:
        conn.close()
        _local.conn = None
