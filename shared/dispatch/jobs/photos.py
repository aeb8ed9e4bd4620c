"""Photo evidence: an upload slot in S3 (a presigned POST) and the photo row that owns it, and
at attach time a look at what was uploaded.

The POST's policy makes S3 refuse an upload of another type than declared, or of more than
`MAX_BYTES` (a presigned PUT could not: up to 5 GB per address, every version kept a year).
Presigning is local signing, no network call, so it may happen inside the transaction. The
look at attach (a HEAD) is a network call, made before the attach's one statement, in no
transaction.
"""

from typing import Any
from uuid import UUID

from dispatch import aws
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.jobs.models import PhotoUpload
from dispatch.jobs.requests import PhotoRequest
from dispatch.jobs.rules import Refusal

MAX_BYTES = 10 * 1024 * 1024  # a phone's photo is 1-5 MB; a bigger upload is refused by S3

CREATE_PHOTO = """
INSERT INTO photos (owner_id, s3_key, content_type)
VALUES (%(owner_id)s, 'photos/' || %(owner_id)s || '/' || gen_random_uuid(), %(content_type)s)
RETURNING id, s3_key, content_type
"""

PHOTO_OF_OWNER = """
SELECT s3_key, content_type FROM photos WHERE id = %(photo_id)s AND owner_id = %(owner_id)s
"""


def create_upload(conn: Connection, owner_id: str, request: PhotoRequest) -> PhotoUpload:
    row = conn.execute(
        CREATE_PHOTO, {"owner_id": owner_id, "content_type": request.content_type}
    ).fetchone()
    assert row is not None  # an INSERT without ON CONFLICT returns its row or raises
    expires_in = settings().photo_upload_seconds
    post = aws.client("s3").generate_presigned_post(
        Bucket=settings().photo_bucket,
        Key=row["s3_key"],
        Fields={"Content-Type": row["content_type"]},
        Conditions=[
            {"Content-Type": row["content_type"]},
            ["content-length-range", 1, MAX_BYTES],
        ],
        ExpiresIn=expires_in,
    )
    return PhotoUpload(
        photo_id=row["id"],
        upload_url=post["url"],
        upload_fields=post["fields"],
        expires_in=expires_in,
    )


def upload_refusal(conn: Connection, owner_id: str, photo_id: UUID) -> Refusal | None:
    """Why the caller's photo cannot be attached as uploaded: not uploaded yet, or not an image
    of its declared type and an allowed size. None when it can, or when the photo is not the
    caller's (the attach refuses that itself, as NOT_FOUND)."""
    row = conn.execute(PHOTO_OF_OWNER, {"photo_id": photo_id, "owner_id": owner_id}).fetchone()
    if row is None:
        return None
    head = _head(row["s3_key"])
    if head is None:
        return Code.PHOTO_NOT_UPLOADED, []
    if head.get("ContentType") != row["content_type"]:
        problem = (
            f"the upload is {head.get('ContentType') or 'untyped'}, not the "
            f"{row['content_type']} the photo was created for; upload it again"
        )
        return Code.VALIDATION_FAILED, [{"field": "photo_id", "problem": problem}]
    size = int(head.get("ContentLength", 0))
    if not 1 <= size <= MAX_BYTES:
        problem = f"the upload is {size} bytes; a photo is 1 byte to {MAX_BYTES} bytes (10 MiB)"
        return Code.VALIDATION_FAILED, [{"field": "photo_id", "problem": problem}]
    return None


def _head(key: str) -> dict[str, Any] | None:
    """The object's metadata, or None when nothing was uploaded under the key."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        head: dict[str, Any] = aws.client("s3").head_object(Bucket=settings().photo_bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise  # access denied and the like: a misconfiguration, logged as one
    except BotoCoreError as error:  # S3 out of reach: retry later, nothing was written
        raise DispatchError(Code.UNAVAILABLE) from error
    return head
