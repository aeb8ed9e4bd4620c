"""The job photos' (dispatch.jobs.photos): read by the functions whose routes take photos."""

from pydantic import Field

from dispatch.config import Group, settings


class PhotoSettings(Group):
    """Read with `photo_settings()`."""

    photo_bucket: str = Field(min_length=1, validation_alias="PHOTO_BUCKET")
    photo_upload_seconds: int = Field(900, gt=0, validation_alias="DISPATCH_PHOTO_UPLOAD_SECONDS")


def photo_settings() -> PhotoSettings:
    return settings.of(PhotoSettings)
