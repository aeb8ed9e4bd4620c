"""The outbox publisher's work: each event from the queue onto the EventBridge bus, once.

A message can arrive twice (at-least-once relay, SQS redelivery); the event id decides: what
was already published is acknowledged and skipped. The put happens before the record of it,
outside any transaction, so a crash between the two can repeat a put; bus consumers dedupe by
the same id.
"""

from collections.abc import Callable, Sequence

from dispatch import aws
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.events import Event
from dispatch.observability import count, logger

CONSUMER = "eventbridge"
SOURCE = "dispatch.jobs"

ALREADY_PUBLISHED = """
SELECT 1 AS done FROM consumed_events WHERE consumer = %(consumer)s AND event_id = %(event_id)s
"""
RECORD_PUBLISHED = """
INSERT INTO consumed_events (consumer, event_id) VALUES (%(consumer)s, %(event_id)s)
ON CONFLICT DO NOTHING
"""

Put = Callable[[Event], None]


class PublishFailed(Exception):
    pass


def publish(
    conn: Connection, event: Event, put: Put, then: Callable[[Event], None] | None = None
) -> bool:
    """Put `event` on the bus unless it already was; True when this call put it. `then` runs
    after the put and before the record (the offer round an opening event starts), so a failure
    there retries both; repeats are harmless (bus consumers dedupe, a wave runs once)."""
    key = {"consumer": CONSUMER, "event_id": event.id}
    if conn.execute(ALREADY_PUBLISHED, key).fetchone():
        return False
    put(event)
    if then is not None:
        then(event)
    conn.execute(RECORD_PUBLISHED, key)
    announce([event])
    return True


def announce(events: Sequence[Event]) -> None:
    """Count and log what went onto the bus: one "published" line per event."""
    count("EventsPublished", len(events))
    for event in events:
        logger.info(
            "published",
            extra={
                "event_id": str(event.id),
                "type": event.type,
                "job_id": str(event.job_id),
                "version": event.version,
            },
        )


PUT_EVENTS_MAX = 10  # entries per PutEvents call


def put_on_bus(event: Event) -> None:
    put_all_on_bus([event])


def put_all_on_bus(events: Sequence[Event]) -> None:
    for start in range(0, len(events), PUT_EVENTS_MAX):
        result = aws.client("events").put_events(
            Entries=[
                {
                    "Source": SOURCE,
                    "DetailType": event.type,
                    "Detail": event.to_json(),
                    "EventBusName": settings().event_bus_name,
                }
                for event in events[start : start + PUT_EVENTS_MAX]
            ]
        )
        if result.get("FailedEntryCount"):
            failed = next(e for e in result["Entries"] if e.get("ErrorCode"))
            raise PublishFailed(failed.get("ErrorMessage", "put_events failed"))
