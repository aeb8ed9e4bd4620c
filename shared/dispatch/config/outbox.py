"""The outbox's delivery (dispatch.outbox): read by the relay, the publisher and the functions
whose routes relay their events."""

from pydantic import Field

from dispatch.config import Group, settings


class OutboxSettings(Group):
    """Read with `outbox_settings()`."""

    # Outbox delivery. No queue URL: events stay in the table until a relay with one runs.
    outbox_queue_url: str | None = Field(None, validation_alias="OUTBOX_QUEUE_URL")
    event_bus_name: str = Field("dispatch", validation_alias="EVENT_BUS_NAME")
    relay_batch_size: int = Field(1000, gt=0, validation_alias="DISPATCH_RELAY_BATCH_SIZE")
    relay_claim_seconds: int = Field(30, gt=0, validation_alias="DISPATCH_RELAY_CLAIM_SECONDS")
    # An event sent to the queue and still not on the bus this long after is sent again: the
    # queue may have lost it (SQS drops a repeat within five minutes; the publisher skips what
    # is already on the bus). Never sooner than it had waited before that send (migration
    # 0056): a backlog is not sent again on every pass.
    relay_resend_seconds: int = Field(20, gt=0, validation_alias="DISPATCH_RELAY_RESEND_SECONDS")
    # How long one run of the scheduled relay keeps looking for stragglers (a pass a second):
    # in AWS nearly its one-minute period, so that a straggler waits seconds, not a minute;
    # locally the scheduler runs it every second instead.
    relay_poll_seconds: int = Field(0, ge=0, validation_alias="DISPATCH_RELAY_POLL_SECONDS")


def outbox_settings() -> OutboxSettings:
    return settings.of(OutboxSettings)
