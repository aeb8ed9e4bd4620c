"""The ops reads: jobs and workers in a box, the event stream after a cursor, the summary."""

import base64
import hashlib
from datetime import UTC, datetime
from uuid import UUID

from dispatch.db import Connection
from dispatch.events import Event
from dispatch.jobs.models import FINISHED_STATUSES, Job, JobLocation, JobStatus
from dispatch.ops import sql
from dispatch.ops.models import (
    Box,
    EventPage,
    OpsJobs,
    OpsWorkers,
    Percentiles,
    Summary,
    WorkerOnMap,
)
from dispatch.outbox.lag import lag_seconds
from dispatch.workers import locations

# What /ops/jobs lists by default: every job not finished (open, assigned, in progress).
LIVE = [status for status in JobStatus if status not in FINISHED_STATUSES]


def jobs_in(conn: Connection, box: Box, statuses: list[JobStatus], limit: int) -> OpsJobs:
    """Jobs in the box with these statuses (finished ones: those that finished in the last
    hour), oldest first."""
    rows = sql.JOBS_IN_BOX.all(
        conn,
        {
            "statuses": list(statuses),
            "min_lat": box.min_lat,
            "max_lat": box.max_lat,
            "min_lng": box.min_lng,
            "max_lng": box.max_lng,
            "limit": limit,
        },
    )
    return OpsJobs(jobs=[Job.from_document(row["document"]) for row in rows])


def workers_in(conn: Connection, box: Box, limit: int) -> OpsWorkers:
    """Fresh positions in the box (Redis, never Postgres), each idle or holding a live job."""
    found = locations.fresh_in_box(box.min_lng, box.min_lat, box.max_lng, box.max_lat, limit)
    rows = sql.BUSY_WORKERS.all(conn, {"ids": [worker_id for worker_id, *_ in found]})
    busy = {row["assignee_id"] for row in rows}
    return OpsWorkers(
        workers=[
            WorkerOnMap(
                id=worker_id,
                location=JobLocation(lat=lat, lng=lng),
                seen_at=datetime.fromtimestamp(seen, UTC).isoformat().replace("+00:00", "Z"),
                busy=worker_id in busy,
            )
            for worker_id, lat, lng, seen in found
        ]
    )


# -- the event stream --------------------------------------------------------------------------

ORIGIN = ("0", "00000000-0000-0000-0000-000000000000")


def _check(tx: str, event_id: str) -> str:
    return hashlib.sha256(f"dispatch-events:{tx}:{event_id}".encode()).hexdigest()[:12]


def cursor_of(tx: str, event_id: str) -> str:
    text = f"v1.{tx}.{event_id}.{_check(tx, event_id)}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def position_of(cursor: str) -> tuple[str, str]:
    """The (transaction, event id) a cursor this server issued stands for; ValueError for any
    other string (a checksum tells a mistyped or made-up cursor from one we gave out)."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, tx, event_id, check = text.split(".")
    except (ValueError, UnicodeDecodeError):
        raise ValueError("is not a cursor this server issued") from None
    if version != "v1" or not tx.isdigit() or check != _check(tx, event_id):
        raise ValueError("is not a cursor this server issued")
    try:
        UUID(event_id)  # what EVENTS_AFTER is sent (a checksum anyone may compute)
    except ValueError:
        raise ValueError("is not a cursor this server issued") from None
    return tx, event_id


def events_after(conn: Connection, cursor: str | None, limit: int) -> EventPage:
    """Job and offer events in the order written, after the cursor (none: the newest page)."""
    if cursor is None:
        rows = sql.NEWEST_EVENTS.all(conn, {"limit": limit})
        last = ORIGIN
    else:
        last = position_of(cursor)
        rows = sql.EVENTS_AFTER.all(conn, {"tx": last[0], "id": UUID(last[1]), "limit": limit})
    if rows:
        last = (rows[-1]["tx"], str(rows[-1]["id"]))
    return EventPage(
        events=[Event.from_document(row["document"]) for row in rows], cursor=cursor_of(*last)
    )


# -- the summary -------------------------------------------------------------------------------


def summary(conn: Connection) -> Summary:
    counts = {status.value: 0 for status in JobStatus}
    for row in sql.JOBS_BY_STATUS.all(conn, None):
        counts[row["status"]] = row["n"]
    hour = sql.LAST_HOUR.one(conn, None)
    assert hour is not None  # a SELECT of aggregates only: one row, always
    return Summary(
        jobs_by_status=counts,
        filled_last_hour=hour["filled"],
        unfilled_last_hour=hour["unfilled"],
        time_to_accept_last_hour_s=Percentiles(p50=hour["p50"], p90=hour["p90"]),
        leases_expiring_in_5_minutes=hour["expiring"],
        relay_lag_s=lag_seconds(conn),
    )
