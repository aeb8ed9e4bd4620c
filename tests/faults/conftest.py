"""Fault fixtures: settings changed for the in-process handlers, and proxies that cut the
handlers off from Postgres or Redis and bring them back."""

import socket
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
import redis

from dispatch import db, roles
from dispatch.config import settings
from dispatch.workers import locations
from dispatch_local.services import app_url
from tests.faults.proxy import Proxy, upstream_of


@pytest.fixture
def reconfigure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Change settings for the handlers in this process; the connection is rebuilt."""

    def apply(**environment: str) -> None:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        settings.cache_clear()
        db.close()
        locations.client.cache_clear()

    yield apply
    monkeypatch.undo()
    settings.cache_clear()
    db.close()
    locations.client.cache_clear()


@pytest.fixture
def role_timeouts(conn: db.Connection) -> Iterator[Callable[..., None]]:
    """Change the application role's timeouts as a deploy would (dispatch.roles, the role's
    own settings in this database); the handlers' next connection has them. Restored after."""

    def apply(statement_timeout_ms: int | None = None, lock_timeout_ms: int | None = None) -> None:
        s = settings()
        roles.configure(
            conn,
            statement_timeout_ms=(
                s.statement_timeout_ms if statement_timeout_ms is None else statement_timeout_ms
            ),
            lock_timeout_ms=s.lock_timeout_ms if lock_timeout_ms is None else lock_timeout_ms,
        )
        db.close()

    yield apply
    apply()


@pytest.fixture
def postgres_proxy(database_url: str, reconfigure: Any) -> Iterator[Proxy]:
    """The handlers reach Postgres through a proxy the test can cut."""
    info = psycopg.conninfo.conninfo_to_dict(database_url)
    proxy = Proxy(upstream_of(str(info.get("host") or "/tmp"), int(info.get("port") or 5432)))
    proxied = psycopg.conninfo.make_conninfo(
        app_url(database_url), host="127.0.0.1", port=proxy.port
    )
    reconfigure(DATABASE_URL=proxied)
    yield proxy
    proxy.close()


@pytest.fixture
def redis_proxy(redis_url: str, reconfigure: Any, cache: redis.Redis) -> Iterator[Proxy]:
    kwargs = cache.connection_pool.connection_kwargs
    if "path" in kwargs:  # embedded Redis listens on a unix socket

        def connect() -> Any:

            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(kwargs["path"])
            return s

        proxy = Proxy(connect)
    else:
        proxy = Proxy(upstream_of(kwargs["host"], int(kwargs["port"])))
    reconfigure(REDIS_URL=f"redis://127.0.0.1:{proxy.port}/{kwargs.get('db', 0)}")
    yield proxy
    proxy.close()
