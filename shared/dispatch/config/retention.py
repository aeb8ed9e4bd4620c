"""The retention duty's (dispatch.retention, docs/retention.md)."""

from pydantic import Field

from dispatch.config import Group, settings


class RetentionSettings(Group):
    """Read with `retention_settings()`."""

    # The retention duty (dispatch.retention, docs/retention.md): a finished job leaves the hot
    # tables this many days after its last change, in batches of this many jobs, each batch
    # exported to the archive bucket before it is deleted.
    retention_hot_days: int = Field(30, gt=0, validation_alias="DISPATCH_RETENTION_HOT_DAYS")
    retention_batch_size: int = Field(
        500, gt=0, le=5000, validation_alias="DISPATCH_RETENTION_BATCH_SIZE"
    )
    archive_bucket: str | None = Field(None, validation_alias="ARCHIVE_BUCKET")


def retention_settings() -> RetentionSettings:
    return settings.of(RetentionSettings)
