"""The per-environment connection: bounded, rebuilt after a drop, 503 while the database is away."""

import os
import socket
from collections.abc import Iterator

import pytest

from dispatch import db
from dispatch.config import settings
from tests.support import BUSINESS, Api, make_job


@pytest.fixture
def fresh_environment() -> Iterator[None]:
    db.close()
    settings.cache_clear()
    yield
    db.close()
    settings.cache_clear()


def test_timeouts_are_bounded(conn: db.Connection, fresh_environment: None) -> None:
    env = db.connection()
    row = env.execute(
        "SELECT current_setting('statement_timeout') AS st, current_setting('lock_timeout') AS lt"
    ).fetchone()
    assert row == {"st": "5s", "lt": "2s"}
    assert env.autocommit


def test_a_dropped_connection_is_rebuilt_and_the_request_succeeds(
    api: Api, conn: db.Connection, fresh_environment: None
) -> None:
    """The environment's connection drops under it (cut at the socket: directly that is the
    server gone; through a pooler, the pooler gone, as a server's death is hidden there)."""
    job = make_job(api)
    dropped = db.connection()
    with socket.socket(fileno=os.dup(dropped.fileno())) as underneath:
        underneath.shutdown(socket.SHUT_RDWR)
    reply = api.call("GET", f"/jobs/{job['id']}", BUSINESS)
    assert reply.status == 200
    assert dropped.broken and db.connection() is not dropped


def test_database_away_is_503_then_recovers_without_restart(
    api: Api, monkeypatch: pytest.MonkeyPatch, fresh_environment: None
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:9/nowhere")
    settings.cache_clear()
    db.close()
    down = api.call("GET", "/health", None, key=None)
    assert (down.status, down.code) == (503, "UNAVAILABLE")
    create = api.call("POST", "/jobs", BUSINESS, {"location": {"lat": 1, "lng": 1}})
    assert create.status == 400  # validation answers before the database is needed
    monkeypatch.undo()
    settings.cache_clear()
    assert api.call("GET", "/health", None, key=None).status == 200


def test_iam_auth_signs_in_with_a_token_for_the_proxy(
    monkeypatch: pytest.MonkeyPatch, fresh_environment: None
) -> None:
    url = "postgresql://dispatch_app@proxy.example.internal:5432/dispatch?sslmode=verify-full"
    token = db.iam_token(url)
    # An RDS auth token is a presigned connect request for that host, port and user.
    assert token.startswith("proxy.example.internal:5432/?Action=connect")
    assert "DBUser=dispatch_app" in token
    assert "X-Amz-Signature=" in token
