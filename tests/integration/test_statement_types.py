"""Every named statement's types are what Postgres says they are.

A statement of the layer is a `db.Query[P, R]`: P a TypedDict of its `%(name)s` parameters, R a
TypedDict of the columns its callers read. mypy holds the callers to P and R; this holds P and R
to the SQL. Each statement is prepared (never run) on the migrated schema, as the application
role, and Postgres describes it: its parameters' types as it infers them and its columns' names
and types. What sqlc and River's generated code do at generate time, done at test time, so that a
renamed column, a parameter added to the SQL and not to P, or a type changed in a migration fails
here instead of in a handler.

Nullability is not checked: Postgres does not describe it, so `X | None` passes for X.
"""

import importlib
import pkgutil
import re
import sys
import types
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints
from uuid import UUID

import pytest
from psycopg import pq

import dispatch
from dispatch.db import Connection, Query
from dispatch_local import REPO_ROOT

PLACEHOLDER = re.compile(r"%\((\w+)\)s")
JSON = {"json", "jsonb"}
# A column's Postgres type and the Python type psycopg reads it as (the rows).
READ_AS: dict[str, type] = {
    "uuid": UUID,
    "text": str,
    "varchar": str,
    "bpchar": str,
    "name": str,
    "int2": int,
    "int4": int,
    "int8": int,
    "bool": bool,
    "float4": float,
    "float8": float,
    "numeric": Decimal,
    "timestamptz": datetime,
    "date": date,
    "interval": timedelta,
}
# A parameter's Postgres type and the Python types that psycopg sends so that the server takes
# them for it (a float or an int where numeric is expected is cast on the server).
SENT_AS: dict[str, tuple[type, ...]] = {
    **{name: (python,) for name, python in READ_AS.items()},
    "numeric": (Decimal, float, int),
    "float4": (float, int),
    "float8": (float, int),
    "json": (str,),  # written by models.to_json
    "jsonb": (str,),
}


def statements() -> Iterator[tuple[str, Query[Any, Any], Any, Any]]:
    """Every module-level Query of the layer, with its declared P and R, by the module that
    writes it (one that imports another's statement does not list it again)."""
    for module_info in pkgutil.walk_packages(dispatch.__path__, "dispatch."):
        module = importlib.import_module(module_info.name)
        written = vars(module).get("__annotations__", {})
        for name, value in vars(module).items():
            if not isinstance(value, Query):
                continue
            imported = name not in written and any(
                value is vars(other).get(name)
                for other in list(sys.modules.values())
                if other is not module and name in vars(other).get("__annotations__", {})
            )
            if imported:
                continue
            declared = get_type_hints(module).get(name)
            assert get_origin(declared) is Query, f"{module_info.name}.{name} needs Query[P, R]"
            params, row = get_args(declared)
            yield f"{module_info.name}.{name}", value, params, row


STATEMENTS = sorted((name, (query, params, row)) for name, query, params, row in statements())


def described(conn: Connection, sql: str) -> tuple[list[str], pq.abc.PGresult]:
    """The statement prepared unnamed with its parameters numbered ($1 ... in order of first
    use) and described: its parameter names in that order and libpq's description."""
    order: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in order:
            order.append(match.group(1))
        return f"${order.index(match.group(1)) + 1}"

    numbered = PLACEHOLDER.sub(number, sql).replace("%%", "%")
    pgconn = conn.pgconn
    prepared = pgconn.prepare(b"", numbered.encode())
    assert prepared.status == pq.ExecStatus.COMMAND_OK, prepared.get_error_message()
    description = pgconn.describe_prepared(b"")
    assert description.status == pq.ExecStatus.COMMAND_OK, description.get_error_message()
    return order, description


def type_name(conn: Connection, oid: int) -> str:
    row = conn.execute("SELECT typname, typtype FROM pg_type WHERE oid = %s", [oid]).fetchone()
    assert row is not None
    return "enum" if row["typtype"] == "e" else str(row["typname"])


def fits(annotation: Any, pg_type: str, reading: bool) -> bool:
    """Whether the declared Python type is one that Postgres's type is read as (a column:
    `reading`) or sent as (a parameter)."""
    if get_origin(annotation) in (Union, types.UnionType):  # each of them (None: any NULL)
        kinds = [arg for arg in get_args(annotation) if arg is not type(None)]
        return all(fits(kind, pg_type, reading) for kind in kinds)
    if pg_type.startswith("_"):  # an array: a list of its element's type
        return get_origin(annotation) is list and fits(
            get_args(annotation)[0], pg_type[1:], reading
        )
    if pg_type in JSON and reading:  # any JSON value
        return (
            annotation is Any
            or annotation in (dict, list)
            or get_origin(annotation)
            in (
                dict,
                list,
            )
        )
    if pg_type == "enum":
        pg_type = "text"
    if get_origin(annotation) is Literal:
        return pg_type == "text" and all(isinstance(arg, str) for arg in get_args(annotation))
    accepted = (READ_AS[pg_type],) if reading and pg_type in READ_AS else SENT_AS.get(pg_type, ())
    if annotation is bool:  # a bool is an int to Python, never to Postgres
        return pg_type == "bool"
    return isinstance(annotation, type) and issubclass(annotation, accepted)


def declared_fields(typed: Any) -> dict[str, Any]:
    return {} if typed is type(None) or typed is None else get_type_hints(typed)


def test_the_layer_has_its_statements() -> None:
    """The walk finds the statements (a walk that found none would pass everything below)."""
    assert len(STATEMENTS) >= 90
    assert "dispatch.jobs.sql.ACCEPT_JOB" in dict(STATEMENTS)


@pytest.mark.parametrize(("name", "statement"), STATEMENTS, ids=[name for name, _ in STATEMENTS])
def test_the_statement_is_typed_as_postgres_describes_it(
    app_conn: Connection, name: str, statement: tuple[Query[Any, Any], Any, Any]
) -> None:
    query, params, row = statement
    order, description = described(app_conn, query.sql)

    declared_params = declared_fields(params)
    assert set(order) == set(declared_params), f"{name}: the SQL's parameters against P"
    for index, param in enumerate(order):
        pg_type = type_name(app_conn, description.param_type(index))
        assert fits(declared_params[param], pg_type, reading=False), (
            f"{name}: %({param})s is {pg_type} in Postgres, P says {declared_params[param]}"
        )

    columns = {
        (description.fname(i) or b"").decode(): type_name(app_conn, description.ftype(i))
        for i in range(description.nfields)
    }
    declared_row = declared_fields(row)
    missing = set(declared_row) - set(columns)
    assert not missing, f"{name}: R names columns the statement does not return: {missing}"
    for column, annotation in declared_row.items():
        assert fits(annotation, columns[column], reading=True), (
            f"{name}: column {column} is {columns[column]} in Postgres, R says {annotation}"
        )


# The layer's only sends that are not a Query, and why: a migration file is many statements,
# whole; ALTER ROLE takes no parameters, so its role and values are composed as identifiers and
# literals (psycopg.sql); Query itself.
UNTYPED_SENDS = {
    "db.py": 3,  # Query.one, .all, .run
    "migrations.py": 1,  # a migration file
    "roles.py": 2,  # ALTER ROLE ... SET, composed
}


# A send to Postgres: any `.execute(` or `.executemany(` but Redis's pipelines' and the
# idempotency module's own `execute` (a command under a key, not SQL).
SEND = re.compile(r"\b(?!pipe\.|idempotency\.)\w+\.execute(?:many)?\(")


def test_the_layer_sends_sql_only_through_its_queries() -> None:
    """One way to send a statement: every `execute` of the layer is a Query's, but for the
    sends listed above, so no statement escapes the types or the check above."""
    layer = REPO_ROOT / "shared" / "dispatch"
    sends = {
        str(path.relative_to(layer)): len(SEND.findall(path.read_text()))
        for path in sorted(layer.rglob("*.py"))
    }
    assert {path: n for path, n in sends.items() if n} == UNTYPED_SENDS
