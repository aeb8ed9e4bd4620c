"""Photo evidence: real uploads to the S3 stand-in, slots that open and freeze, and the
database refusing the same things by itself."""

import base64
import json
import os
import uuid
from typing import Any

import boto3
import psycopg
import pytest

from dispatch import aws
from dispatch.db import Connection
from dispatch_local import photos
from tests.support import (
    BUSINESS,
    Api,
    attach,
    make_job,
    make_worker,
    step,
    upload_photo,
    walk_to,
    worker,
)

HOLDER = worker("holder")


def put_photo(api: Api, job: dict[str, Any], slot: str, photo: str, who: Any = HOLDER) -> Any:
    return api.call("PUT", f"/jobs/{job['id']}/photos/{slot}", who, {"photo_id": photo})


def slot(api: Api, who: Any = HOLDER, content_type: str = "image/jpeg") -> dict[str, Any]:
    reply = api.call("POST", "/photos", who, {"content_type": content_type})
    assert reply.status == 201, reply.body
    body: dict[str, Any] = reply.body
    return body


def test_upload_url_really_accepts_the_photo(api: Api, aws_stand_in: str) -> None:
    make_worker(api, HOLDER)
    upload = slot(api, content_type="image/png")
    assert upload["expires_in"] == 900
    assert upload["upload_url"].startswith(aws_stand_in)
    sent = photos.upload(upload, b"\x89PNG\r\n\x1a\n")
    assert sent.status_code in (200, 204), sent.text
    head = boto3.client("s3").head_object(
        Bucket=os.environ["PHOTO_BUCKET"], Key=upload["upload_fields"]["key"]
    )
    assert (head["ContentType"], head["ContentLength"]) == ("image/png", 8)


def test_the_upload_policy_caps_size_and_type(api: Api) -> None:
    """What S3 enforces on the presigned POST (the stand-in does not): the form's policy
    allows this key only, the declared type only, 1 byte to 10 MiB, signed with SigV4."""
    upload = slot(api, content_type="image/webp")
    fields = upload["upload_fields"]
    policy = json.loads(base64.b64decode(fields["policy"]))
    conditions = policy["conditions"]
    assert {"Content-Type": "image/webp"} in conditions
    assert ["content-length-range", 1, 10 * 1024 * 1024] in conditions
    assert {"key": fields["key"]} in conditions and fields["key"].startswith("photos/")
    assert fields["Content-Type"] == "image/webp"
    assert fields["x-amz-algorithm"] == "AWS4-HMAC-SHA256"  # SigV2 is refused by new buckets


def test_in_aws_the_upload_goes_to_the_buckets_regional_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """botocore would presign for s3.amazonaws.com, which redirects (and so breaks the
    signature) for a bucket outside us-east-1."""
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    post = aws.connect("s3").generate_presigned_post("dispatch-photos-x", "photos/w/1")
    assert post["url"] == "https://dispatch-photos-x.s3.eu-west-1.amazonaws.com/"


def test_attach_before_the_upload_is_refused(api: Api, conn: Connection) -> None:
    """No photo, no wash: a photo id whose upload never arrived is not evidence, and the job
    cannot start on it."""
    make_worker(api, HOLDER)
    job = make_job(api, BUSINESS)
    job = api.call("POST", f"/jobs/{job['id']}/accept", HOLDER, {}).body
    never_sent = slot(api)["photo_id"]
    reply = put_photo(api, job, "before", never_sent)
    assert (reply.status, reply.code) == (409, "PHOTO_NOT_UPLOADED")
    row = conn.execute("SELECT version, before_photo_id FROM jobs WHERE id = %s", (job["id"],))
    assert row.fetchone() == {"version": job["version"], "before_photo_id": None}
    start = api.call(
        "POST",
        f"/jobs/{job['id']}/transitions",
        HOLDER,
        {"event": "start", "version": job["version"]},
    )
    assert (start.status, start.code) == (409, "BEFORE_PHOTO_REQUIRED")


def test_attach_after_the_upload_is_accepted_with_a_new_key(api: Api) -> None:
    """The refusal is stored under its key (a retry with it replays the 409); once the
    upload has arrived, the attach goes through under a new key."""
    job = walk_to(api, "assigned", holder=HOLDER)
    upload = slot(api)
    body = {"photo_id": upload["photo_id"]}
    path = f"/jobs/{job['id']}/photos/before"
    early = api.call("PUT", path, HOLDER, body, key="early-attach")
    assert early.code == "PHOTO_NOT_UPLOADED"
    assert photos.upload(upload, b"\xff\xd8\xff").status_code in (200, 204)
    replay = api.call("PUT", path, HOLDER, body, key="early-attach")
    assert (replay.status, replay.code) == (409, "PHOTO_NOT_UPLOADED")
    attached = api.call("PUT", path, HOLDER, body)
    assert attached.status == 200, attached.body
    assert attached.body["before_photo_id"] == upload["photo_id"]


def test_an_upload_not_of_its_declared_type_is_refused(api: Api) -> None:
    """S3 refuses such a form by its policy; should one get there anyway, attach says so."""
    job = walk_to(api, "assigned", holder=HOLDER)
    upload = slot(api)
    lying = {**upload, "upload_fields": {**upload["upload_fields"], "Content-Type": "text/html"}}
    assert photos.upload(lying, b"<script>").status_code in (200, 204)  # the stand-in lets it
    reply = put_photo(api, job, "before", upload["photo_id"])
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    assert reply.body["error"]["details"][0]["field"] == "photo_id"


def test_an_upload_too_large_is_refused(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    upload = slot(api)
    assert photos.upload(upload, b"\0" * (10 * 1024 * 1024 + 1)).status_code in (200, 204)
    reply = put_photo(api, job, "before", upload["photo_id"])
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    assert "10 MiB" in reply.body["error"]["details"][0]["problem"]


def test_an_empty_upload_is_refused(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    upload = slot(api)
    assert photos.upload(upload, b"").status_code in (200, 204)
    reply = put_photo(api, job, "before", upload["photo_id"])
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")


def test_a_strangers_attach_hears_not_found_before_anything_about_the_upload(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    stranger = worker("stranger-upload")
    make_worker(api, stranger)
    never_sent = slot(api, who=stranger)["photo_id"]
    reply = put_photo(api, job, "before", never_sent, who=stranger)
    assert (reply.status, reply.code) == (404, "NOT_FOUND")


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
