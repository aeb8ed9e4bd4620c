"""Configuration from the environment, parsed once per execution environment (cold start)."""

from functools import cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    database_url: str = Field(
        "postgresql://postgres@127.0.0.1:5432/dispatch", validation_alias="DATABASE_URL"
    )
    # Through RDS Proxy in AWS: sign in with a short-lived IAM token instead of a password.
    database_iam_auth: bool = Field(False, validation_alias="DATABASE_IAM_AUTH")
    redis_url: str | None = Field(None, validation_alias="REDIS_URL")
    # Check-in deadline given to the winner of an accept.
    lease_seconds: int = Field(600, gt=0, validation_alias="DISPATCH_LEASE_SECONDS")
    # Every statement and lock wait is bounded: a stuck query must not hold a Lambda hostage.
    statement_timeout_ms: int = Field(5000, gt=0, validation_alias="DISPATCH_STATEMENT_TIMEOUT_MS")
    # Also the "short wait" of a duplicate request behind its still-running twin.
    lock_timeout_ms: int = Field(2000, gt=0, validation_alias="DISPATCH_LOCK_TIMEOUT_MS")
    max_body_bytes: int = Field(16_384, gt=0, validation_alias="DISPATCH_MAX_BODY_BYTES")
    idempotency_ttl_hours: int = Field(24, gt=0, validation_alias="DISPATCH_IDEMPOTENCY_TTL_HOURS")
    # Expired leases reopened per sweeper transaction (see bench/sweeper.py for the choice).
    sweep_batch_size: int = Field(100, gt=0, validation_alias="DISPATCH_SWEEP_BATCH_SIZE")
    # Share of wall time the sweeper works through a backlog; it rests the remainder.
    sweep_duty: float = Field(0.25, gt=0, le=1, validation_alias="DISPATCH_SWEEP_DUTY")
    # Outbox delivery. No queue URL: events stay in the table until a relay with one runs.
    outbox_queue_url: str | None = Field(None, validation_alias="OUTBOX_QUEUE_URL")
    event_bus_name: str = Field("dispatch", validation_alias="EVENT_BUS_NAME")
    relay_batch_size: int = Field(1000, gt=0, validation_alias="DISPATCH_RELAY_BATCH_SIZE")
    relay_claim_seconds: int = Field(30, gt=0, validation_alias="DISPATCH_RELAY_CLAIM_SECONDS")
    photo_bucket: str = Field("dispatch-photos-local", validation_alias="PHOTO_BUCKET")
    photo_upload_seconds: int = Field(900, gt=0, validation_alias="DISPATCH_PHOTO_UPLOAD_SECONDS")


@cache
def settings() -> Settings:
    return Settings()
