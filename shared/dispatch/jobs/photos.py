"""Photo evidence: an upload slot in S3 (presigned PUT) and the photo row that owns it.

Presigning is local signing, no network call, so it may happen inside the transaction.
"""

from dispatch import aws
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.jobs.models import PhotoRequest, PhotoUpload

CREATE_PHOTO = """
INSERT INTO photos (owner_id, s3_key, content_type)
VALUES (%(owner_id)s, 'photos/' || %(owner_id)s || '/' || gen_random_uuid(), %(content_type)s)
RETURNING id, s3_key, content_type
"""


def create_upload(conn: Connection, owner_id: str, request: PhotoRequest) -> PhotoUpload:
    row = conn.execute(
        CREATE_PHOTO, {"owner_id": owner_id, "content_type": request.content_type}
    ).fetchone()
    assert row is not None  # an INSERT without ON CONFLICT returns its row or raises
    expires_in = settings().photo_upload_seconds
    url = aws.client("s3").generate_presigned_url(
        "put_object",
        Params={
            "Bucket": settings().photo_bucket,
            "Key": row["s3_key"],
            "ContentType": row["content_type"],
        },
        ExpiresIn=expires_in,
    )
    return PhotoUpload(photo_id=row["id"], upload_url=url, expires_in=expires_in)
