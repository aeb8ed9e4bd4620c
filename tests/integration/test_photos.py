"""Photo evidence: real uploads to the S3 stand-in, slots that open and freeze, and the
database refusing the same things by itself."""

import os
import uuid
from typing import Any

import psycopg
import pytest
import requests

from dispatch.db import Connection
from tests.support import (
    BUSINESS,
    Api,
    attach,
    make_worker,
    step,
    upload_photo,
    walk_to,
    worker,
)

HOLDER = worker("holder")


def put_photo(api: Api, job: dict[str, Any], slot: str, photo: str, who: Any = HOLDER) -> Any:
    return api.call("PUT", f"/jobs/{job['id']}/photos/{slot}", who, {"photo_id": photo})


def test_upload_url_really_accepts_the_photo(api: Api, aws_stand_in: str) -> None:
    make_worker(api, HOLDER)
    reply = api.call("POST", "/photos", HOLDER, {"content_type": "image/png"})
    assert reply.status == 201
    assert reply.body["expires_in"] == 900
    assert reply.body["upload_url"].startswith(aws_stand_in)
    put = requests.put(
        reply.body["upload_url"], data=b"png", headers={"Content-Type": "image/png"}, timeout=10
    )
    assert put.status_code == 200
    import boto3

    listed = boto3.client("s3").list_objects_v2(Bucket=os.environ["PHOTO_BUCKET"])
    assert any(reply.body["photo_id"] for _ in listed.get("Contents", []))


@pytest.mark.parametrize("content_type", ["text/html", "image/gif", "", None])
def test_only_images(api: Api, content_type: Any) -> None:
    reply = api.call("POST", "/photos", HOLDER, {"content_type": content_type})
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")


def test_slots_open_and_freeze(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    # Before may be replaced while assigned; after is not open yet.
    job = attach(api, job, HOLDER, "before")
    early = put_photo(api, job, "after", upload_photo(api, HOLDER))
    assert (early.status, early.code) == (409, "PHOTO_SLOT_CLOSED")
    job = step(api, job, HOLDER, "start")
    frozen = put_photo(api, job, "before", upload_photo(api, HOLDER))
    assert (frozen.status, frozen.code) == (409, "PHOTO_SLOT_CLOSED")
    job = attach(api, job, HOLDER, "after")
    job = attach(api, job, HOLDER, "after")  # replaceable while in progress
    job = step(api, job, HOLDER, "complete")
    late = put_photo(api, job, "after", upload_photo(api, HOLDER))
    assert (late.status, late.code) == (409, "PHOTO_SLOT_CLOSED")


def test_attaching_bumps_the_version_and_writes_an_event(api: Api, conn: Connection) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    moved = attach(api, job, HOLDER, "before")
    assert moved["version"] == job["version"] + 1
    last = conn.execute(
        "SELECT type FROM job_events WHERE job_id = %s ORDER BY version DESC LIMIT 1", (job["id"],)
    ).fetchone()
    assert last == {"type": "job.photo_attached"}


def test_a_photo_belongs_to_its_uploader(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    make_worker(api, worker("other"))
    theirs = upload_photo(api, worker("other"))
    reply = put_photo(api, job, "before", theirs)
    assert (reply.status, reply.code) == (404, "NOT_FOUND")
    unknown = put_photo(api, job, "before", str(uuid.uuid4()))
    assert (unknown.status, unknown.code) == (404, "NOT_FOUND")


def test_only_the_assignee_attaches(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    stranger = worker("stranger")
    make_worker(api, stranger)
    reply = put_photo(api, job, "before", upload_photo(api, stranger), who=stranger)
    assert (reply.status, reply.code) == (404, "NOT_FOUND")
    business = api.call("PUT", f"/jobs/{job['id']}/photos/before", BUSINESS, {"photo_id": "x"})
    assert business.status == 403


def test_the_two_photos_differ(api: Api) -> None:
    job = walk_to(api, "in_progress", holder=HOLDER)
    reply = put_photo(api, job, "after", job["before_photo_id"])
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")


@pytest.mark.parametrize("slot", ["sideways", "BEFORE", "1"])
def test_unknown_slot(api: Api, slot: str) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    reply = put_photo(api, job, slot, upload_photo(api, HOLDER))
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")


# -- the database alone ---------------------------------------------------------------------


def photo_row(conn: Connection, owner: str) -> Any:
    row = conn.execute(
        "INSERT INTO photos (owner_id, s3_key, content_type) "
        "VALUES (%s, gen_random_uuid()::text, 'image/jpeg') RETURNING id",
        (owner,),
    ).fetchone()
    assert row is not None
    return row["id"]


def refused(conn: Connection, sql: str, params: tuple[Any, ...], constraint: str) -> None:
    with pytest.raises(psycopg.IntegrityError) as caught:
        conn.execute(sql, params)
    assert caught.value.diag.constraint_name == constraint


def test_database_refuses_work_without_evidence(api: Api, conn: Connection) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    conn.execute("UPDATE jobs SET before_photo_id = NULL WHERE id = %s", (job["id"],))
    refused(
        conn,
        "UPDATE jobs SET status = 'in_progress', lease_expires_at = NULL WHERE id = %s",
        (job["id"],),
        "jobs_photo_gate",
    )
    done = walk_to(api, "in_progress", holder=worker("w-2"))
    conn.execute("UPDATE jobs SET after_photo_id = NULL WHERE id = %s", (done["id"],))
    refused(
        conn, "UPDATE jobs SET status = 'completed' WHERE id = %s", (done["id"],), "jobs_photo_gate"
    )


def test_database_refuses_one_photo_in_both_slots(api: Api, conn: Connection) -> None:
    job = walk_to(api, "in_progress", holder=HOLDER)
    refused(
        conn,
        "UPDATE jobs SET after_photo_id = before_photo_id WHERE id = %s",
        (job["id"],),
        "jobs_photos_differ",
    )


def test_database_freezes_slots_past_their_stage(api: Api, conn: Connection) -> None:
    job = walk_to(api, "in_progress", holder=HOLDER)
    fresh = photo_row(conn, HOLDER[0])
    refused(
        conn,
        "UPDATE jobs SET before_photo_id = %s WHERE id = %s",
        (fresh, job["id"]),
        "jobs_before_photo_frozen",
    )
    done = walk_to(api, "completed", holder=worker("w-3"))
    refused(
        conn,
        "UPDATE jobs SET after_photo_id = %s WHERE id = %s",
        (photo_row(conn, worker("w-3")[0]), done["id"]),
        "jobs_after_photo_frozen",
    )
    assigned = walk_to(api, "assigned", holder=worker("w-4"))
    refused(
        conn,
        "UPDATE jobs SET after_photo_id = %s WHERE id = %s",
        (photo_row(conn, worker("w-4")[0]), assigned["id"]),
        "jobs_after_photo_frozen",
    )


def test_database_refuses_someone_elses_photo(api: Api, conn: Connection) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    refused(
        conn,
        "UPDATE jobs SET before_photo_id = %s WHERE id = %s",
        (photo_row(conn, "someone-else"), job["id"]),
        "jobs_photo_owned_by_assignee",
    )


def test_database_refuses_non_images(conn: Connection) -> None:
    refused(
        conn,
        "INSERT INTO photos (owner_id, s3_key, content_type) VALUES ('w', 'k', %s)",
        ("text/html",),
        "photos_content_type_image",
    )
