"""The database refuses illegal states by itself: plain SQL, no application code involved."""

from typing import Any

import psycopg
import pytest
from psycopg import errors

from dispatch.db import Connection

JOB = """
INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
VALUES ('b-1', 12.9, 77.5, '{wash}', now() + interval '1 hour', now() + interval '2 hours')
RETURNING id
"""


@pytest.fixture
def job_id(conn: Connection) -> Any:
    row = conn.execute(JOB).fetchone()
    assert row is not None
    return row["id"]


def refused(conn: Connection, sql: str, params: dict[str, Any], constraint: str) -> None:
    with pytest.raises(psycopg.IntegrityError) as caught:
        conn.execute(sql, params)
    assert caught.value.diag.constraint_name == constraint


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("status = 'lost'", "jobs_status_valid"),
        ("version = 0", "jobs_version_positive"),
        ("status = 'assigned', lease_expires_at = now()", "jobs_assignee_iff_taken"),
        ("assignee_id = 'w-1'", "jobs_assignee_iff_taken"),
        ("status = 'in_progress'", "jobs_assignee_iff_taken"),
        ("status = 'assigned', assignee_id = 'w-1'", "jobs_lease_iff_assigned"),
        ("lease_expires_at = now()", "jobs_lease_iff_assigned"),
        (
            "status = 'in_progress', assignee_id = 'w-1', lease_expires_at = now()",
            "jobs_lease_iff_assigned",
        ),
        ("window_end = window_start", "jobs_window_ordered"),
        ("lat = 90.5", "jobs_lat_range"),
        ("lng = -181", "jobs_lng_range"),
        ("skills = '{wash,NULL}'", "jobs_skills_no_nulls"),
    ],
)
def test_illegal_job_rows_are_refused(
    conn: Connection, job_id: Any, assignment: str, constraint: str
) -> None:
    refused(conn, f"UPDATE jobs SET {assignment} WHERE id = %(id)s", {"id": job_id}, constraint)


def test_one_live_job_per_worker(conn: Connection) -> None:
    first = conn.execute(JOB).fetchone()
    second = conn.execute(JOB).fetchone()
    assert first
    assert second
    take = """UPDATE jobs SET status = 'assigned', assignee_id = 'w-1', lease_expires_at = now()
              WHERE id = %(id)s"""
    conn.execute(take, {"id": first["id"]})
    refused(conn, take, {"id": second["id"]}, "jobs_one_live_job_per_worker")
    # In progress is live too.
    photo = conn.execute(
        "INSERT INTO photos (owner_id, s3_key, content_type) VALUES ('w-1', 'k', 'image/jpeg') "
        "RETURNING id"
    ).fetchone()
    assert photo
    conn.execute(
        "UPDATE jobs SET before_photo_id = %(photo)s WHERE id = %(id)s",
        {"photo": photo["id"], "id": first["id"]},
    )
    conn.execute(
        "UPDATE jobs SET status = 'in_progress', lease_expires_at = NULL WHERE id = %(id)s",
        {"id": first["id"]},
    )
    refused(conn, take, {"id": second["id"]}, "jobs_one_live_job_per_worker")
    # A finished job does not count as live.
    conn.execute(
        "UPDATE jobs SET status = 'cancelled', assignee_id = NULL WHERE id = %(id)s",
        {"id": first["id"]},
    )
    conn.execute(take, {"id": second["id"]})


def test_one_event_per_job_version(conn: Connection, job_id: Any) -> None:
    event = """INSERT INTO job_events (job_id, type, version, actor, data)
               SELECT id, %(type)s, 1, 'b-1', dispatch_job(j) FROM jobs j WHERE id = %(id)s"""
    conn.execute(event, {"id": job_id, "type": "job.created"})
    refused(conn, event, {"id": job_id, "type": "job.assigned"}, "job_events_one_per_change")


@pytest.mark.parametrize(
    ("column", "value", "constraint"),
    [
        ("type", "created", "job_events_type_valid"),
        ("version", 0, "job_events_version_positive"),
    ],
)
def test_malformed_events_are_refused(
    conn: Connection, job_id: Any, column: str, value: Any, constraint: str
) -> None:
    values = {"type": "job.created", "version": 1} | {column: value}
    refused(
        conn,
        """INSERT INTO job_events (job_id, type, version, actor)
           VALUES (%(id)s, %(type)s, %(version)s, 'b-1')""",
        {"id": job_id, **values},
        constraint,
    )


def test_event_of_unknown_job_is_refused(conn: Connection) -> None:
    with pytest.raises(errors.ForeignKeyViolation):
        conn.execute(
            """INSERT INTO job_events (job_id, type, version, actor)
               VALUES (gen_random_uuid(), 'job.created', 1, 'b-1')"""
        )


@pytest.mark.parametrize("key", ["", "has space", "tab\tkey", "é", "k" * 256])
def test_idempotency_key_format(conn: Connection, key: str) -> None:
    refused(
        conn,
        "INSERT INTO idempotency_keys (principal, key, fingerprint) VALUES ('p', %(key)s, 'f')",
        {"key": key},
        "idempotency_keys_key_format",
    )


def test_idempotency_key_is_unique_per_principal_only(conn: Connection) -> None:
    insert = """INSERT INTO idempotency_keys (principal, key, fingerprint)
                VALUES (%(principal)s, 'k-1', 'f')"""
    conn.execute(insert, {"principal": "alice"})
    conn.execute(insert, {"principal": "bob"})
    refused(conn, insert, {"principal": "alice"}, "idempotency_keys_pkey")


def test_worker_rating_range(conn: Connection) -> None:
    refused(
        conn,
        "INSERT INTO workers (id, rating) VALUES ('w-1', %(rating)s)",
        {"rating": 5.5},
        "workers_rating_range",
    )


def test_job_ids_are_uuid_version_7_in_creation_order(conn: Connection) -> None:
    ids = [conn.execute(JOB).fetchone()["id"] for _ in range(5)]  # type: ignore[index]
    assert all(i.version == 7 for i in ids)
    assert ids == sorted(ids)
