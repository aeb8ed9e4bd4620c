"""Who is connected: the $connect and $disconnect handlers' work, and the look-ups of who
hears an event and what expired."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from dispatch.db import Connection
from dispatch.events import Event
from dispatch.jobs.models import JobEventType
from dispatch.push import sql


@dataclass(frozen=True)
class Recipient:
    connection_id: str
    expired: bool


def connect(
    conn: Connection,
    connection_id: str,
    caller_id: str,
    roles: Iterable[str],
    token_expires_at: datetime,
) -> None:
    sql.CONNECT.run(
        conn,
        {
            "connection_id": connection_id,
            "caller_id": caller_id,
            "roles": sorted(roles),
            "token_expires_at": token_expires_at,
        },
    )


def forget(conn: Connection, connection_ids: Sequence[str]) -> None:
    if connection_ids:
        sql.FORGET.run(conn, {"connection_ids": list(connection_ids)})


def disconnect(conn: Connection, connection_id: str, caller_id: str) -> bool:
    """The connection is closed: forgotten; True when it was its caller's last live one (a
    worker's position then goes too: push's function does it)."""
    row = sql.DISCONNECT.one(conn, {"connection_id": connection_id, "caller_id": caller_id})
    return row is not None and row["last"]


def recipients(conn: Connection, event: Event) -> list[Recipient]:
    """Every connection allowed to hear the event (the contract's "Push")."""
    workers = [
        value
        for value in (event.data.get("worker_id"), event.data.get("assignee_id"))
        if isinstance(value, str)
    ]
    rows = sql.RECIPIENTS.all(
        conn,
        {
            "workers": workers,
            "job_event": event.type in JOB_EVENT_TYPES,
            "job_id": event.job_id,
            "version": event.version,
        },
    )
    return [Recipient(row["connection_id"], row["expired"]) for row in rows]


JOB_EVENT_TYPES = frozenset(t.value for t in JobEventType)


def expired(conn: Connection, limit: int = 500) -> list[str]:
    return [row["connection_id"] for row in sql.EXPIRED.all(conn, {"limit": limit})]
