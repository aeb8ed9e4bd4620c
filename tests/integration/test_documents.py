"""One serialiser: the Job and the event envelope are written by Postgres (`dispatch_job`,
`dispatch_event`), and what the API answers is exactly what every event carries.

Found from outside: event `data` was `to_jsonb` of the storage row (cells, flat lat/lng,
window_start), so a migration changed what consumers on the bus received.
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatch import db
from dispatch.jobs.models import Job, JobChanged
from tests.support import BUSINESS, OPS, Api, walk_to, worker


def storage_only(conn: db.Connection) -> set[str]:
    """The jobs table's columns that the public Job does not have (lat, lng, mercator, ...)."""
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'jobs'"
    ).fetchall()
    return {r["column_name"] for r in rows} - set(Job.model_fields)


def test_every_event_carries_the_public_job_the_api_shows(conn: db.Connection, api: Api) -> None:
    hidden = storage_only(conn)
    assert {"lat", "lng", "window_start", "mercator"} <= hidden
    for status in ("completed", "cancelled"):
        job = walk_to(api, status, holder=worker(f"doc-{status}"))
        events = api.call("GET", f"/jobs/{job['id']}/events", BUSINESS).body["events"]
        assert [e["version"] for e in events] == list(range(1, job["version"] + 1))
        for event in events:
            assert set(event) == set(JobChanged.model_fields)
            assert set(event["data"]) == set(Job.model_fields), "only the public Job"
            assert not hidden & set(event["data"])
            assert event["data"]["version"] == event["version"]
            assert event["data"]["updated_at"] == event["occurred_at"]
        assert events[-1]["data"] == api.call("GET", f"/jobs/{job['id']}", OPS).body == job


def test_the_database_writes_every_field_of_the_model(conn: db.Connection, api: Api) -> None:
    """A field added to the Job model and not to dispatch_job (or the other way) fails here."""
    walk_to(api, "completed", holder=worker("doc-fields"))
    for row in conn.execute("SELECT dispatch_job(j) AS document FROM jobs j"):
        assert set(row["document"]) == set(Job.model_fields)
        Job.from_document(row["document"])


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
    )
)
def test_times_are_written_as_python_writes_them(conn: db.Connection, moment: datetime) -> None:
    row = conn.execute("SELECT dispatch_time(%s) AS text", (moment,)).fetchone()
    assert row is not None
    assert row["text"] == moment.isoformat().replace("+00:00", "Z")
    assert datetime.fromisoformat(row["text"]) == moment


def test_a_time_in_another_zone_is_written_in_utc(conn: db.Connection) -> None:
    local = datetime(2026, 12, 1, 9, 30, tzinfo=UTC).astimezone(ZoneInfo("Asia/Kolkata"))
    conn.execute("SET TIME ZONE 'America/Lima'")
    row = conn.execute("SELECT dispatch_time(%s) AS text", (local,)).fetchone()
    assert row == {"text": "2026-12-01T09:30:00Z"}
    assert datetime(2026, 12, 1, 9, 30, tzinfo=UTC) - local == timedelta(0)
