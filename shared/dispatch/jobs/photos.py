"""Photo evidence: an upload slot in S3 (a presigned POST) and the photo row that owns it, and
at attach time a look at what was uploaded.

The POST's policy makes S3 refuse an upload of another type than declared, or of more than
`MAX_BYTES` (a presigned PUT could not: up to 5 GB per address, every version kept a year).
Presigning is local signing, no network call: the object's key is chosen and signed first, then
one statement stores the photo row with its answer (and, given the caller's key, the key with
it). The look at attach (a HEAD) is a network call, made before the attach's one statement, in
no transaction.
"""

from typing import Any, TypedDict
from uuid import UUID, uuid4

from dispatch import aws
from dispatch.config.photos import photo_settings
from dispatch.db import Answering, Connection, Query
from dispatch.errors import Code, DispatchError
from dispatch.idempotency import KeyedRequest, answering
from dispatch.jobs.models import PhotoUpload
from dispatch.jobs.requests import PhotoRequest
from dispatch.jobs.rules import Refusal
from dispatch.models import to_json

MAX_BYTES = 10 * 1024 * 1024  # a phone's photo is 1-5 MB; a bigger upload is refused by S3


# The photo's row and the upload's answer (the presigned POST made before, %(upload_url)s and
# %(upload_fields)s, with the photo's new id), in PhotoUpload's field order.
class CreatePhotoParams(Answering):
    owner_id: str
    s3_key: str
    content_type: str
    upload_url: str
    upload_fields: str
    expires_in: int


class PhotoAnswer(TypedDict):
    answer: str


CREATE_PHOTO: Query[CreatePhotoParams, PhotoAnswer] = Query("""
WITH made AS (
    INSERT INTO photos (owner_id, s3_key, content_type)
    VALUES (%(owner_id)s, %(s3_key)s, %(content_type)s)
    RETURNING id
), answers AS (
    SELECT row_to_json(upload)::text AS answer
      FROM (SELECT id AS photo_id, %(upload_url)s::text AS upload_url,
                   %(upload_fields)s::json AS upload_fields, %(expires_in)s::integer AS expires_in
              FROM made) upload
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")


class PhotoOfOwnerParams(TypedDict):
    photo_id: UUID
    owner_id: str


class PhotoObject(TypedDict):
    s3_key: str
    content_type: str


PHOTO_OF_OWNER: Query[PhotoOfOwnerParams, PhotoObject] = Query("""
SELECT s3_key, content_type FROM photos WHERE id = %(photo_id)s AND owner_id = %(owner_id)s
""")


def create_upload(
    conn: Connection, owner_id: str, request: PhotoRequest, key: KeyedRequest | None = None
) -> PhotoUpload:
    s3_key = f"photos/{owner_id}/{uuid4()}"
    expires_in = photo_settings().photo_upload_seconds
    post = aws.client("s3").generate_presigned_post(
        Bucket=photo_settings().photo_bucket,
        Key=s3_key,
        Fields={"Content-Type": request.content_type},
        Conditions=[
            {"Content-Type": request.content_type},
            ["content-length-range", 1, MAX_BYTES],
        ],
        ExpiresIn=expires_in,
    )
    params: CreatePhotoParams = {
        "owner_id": owner_id,
        "s3_key": s3_key,
        "content_type": request.content_type,
        "upload_url": post["url"],
        "upload_fields": to_json(post["fields"]),
        "expires_in": expires_in,
        **answering(key, 201),
    }
    row = CREATE_PHOTO.one(conn, params)
    assert row is not None  # an INSERT without ON CONFLICT returns its row or raises
    return PhotoUpload.from_json(row["answer"])


def upload_refusal(conn: Connection, owner_id: str, photo_id: UUID) -> Refusal | None:
    """Why the caller's photo cannot be attached as uploaded: not uploaded yet, or not an image
    of its declared type and an allowed size. None when it can, or when the photo is not the
    caller's (the attach refuses that itself, as NOT_FOUND)."""
    row = PHOTO_OF_OWNER.one(conn, {"photo_id": photo_id, "owner_id": owner_id})
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
        head: dict[str, Any] = aws.client("s3").head_object(
            Bucket=photo_settings().photo_bucket, Key=key
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise  # access denied and the like: a misconfiguration, logged as one
    except BotoCoreError as error:  # S3 out of reach: retry later, nothing was written
        raise DispatchError(Code.UNAVAILABLE) from error
    return head
