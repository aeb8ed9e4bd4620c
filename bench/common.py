"""Shared by the benchmarks: a database to measure on, and honest statistics."""

import os
import statistics
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import psycopg

from dispatch import db, migrations
from dispatch_local import REPO_ROOT, home
from dispatch_local.services import owner_url

R = TypeVar("R")


def one(cursor: psycopg.Cursor[R]) -> R:
    """The one row of a benchmark's own statement that always returns one (now(), a count)."""
    row = cursor.fetchone()
    assert row is not None, "the statement returned no row"
    return row


@contextmanager
def bench_database(admin: str | None = None) -> Iterator[str]:
    """A fresh, migrated database on `admin`'s server (by default DATABASE_URL's, or an embedded
    one), dropped after."""
    admin = admin or owner_url()
    if not admin:
        from dispatch_local import embedded

        admin = embedded.postgres(home() / "bench-pg", database="postgres")
    os.environ.setdefault(
        "DATABASE_URL", admin
    )  # the settings ask for one; each call names its own
    name = f"dispatch_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = psycopg.conninfo.make_conninfo(admin, dbname=name)
    try:
        with db.connect(url) as conn:
            migrations.apply(conn, migrations.load(REPO_ROOT / "migrations"))
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def bench_redis() -> str:
    """REDIS_URL's Redis, or an embedded one (a newcomer's machine has none)."""
    if url := os.environ.get("REDIS_URL"):
        return url
    from dispatch_local import embedded

    return embedded.redis(home())


@dataclass(frozen=True)
class Timing:
    count: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


def timing(latencies_ns: Sequence[int], seconds: float) -> Timing:
    ordered = sorted(latencies_ns)
    if len(ordered) < 2:
        p50 = p99 = ordered[0] / 1e6 if ordered else 0.0
    else:
        cuts = statistics.quantiles(ordered, n=100, method="inclusive")
        p50, p99 = cuts[49] / 1e6, cuts[98] / 1e6
    return Timing(len(ordered), seconds, p50, p99)
