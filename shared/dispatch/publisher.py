"""The outbox publisher's work: each event from the queue onto the EventBridge bus, once.

A message can arrive twice (at-least-once relay, SQS redelivery); the event id decides: what
was already published is acknowledged and skipped. The put happens before the record of it,
outside any transaction, so a crash between the two can repeat a put; bus consumers dedupe by
the same id.
"""

from collections.abc import Callable
from functools import cache
from typing import Any

import boto3

from dispatch.config import settings
from dispatch.db import Connection
from dispatch.jobs.models import JobEvent
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

Put = Callable[[JobEvent], None]


class PublishFailed(Exception):
    pass


def publish(conn: Connection, event: JobEvent, put: Put) -> bool:
    """Put `event` on the bus unless it already was; True when this call put it."""
    key = {"consumer": CONSUMER, "event_id": event.id}
    if conn.execute(ALREADY_PUBLISHED, key).fetchone():
        return False
    put(event)
    conn.execute(RECORD_PUBLISHED, key)
    count("EventsPublished")
    logger.info(
        "published",
        extra={
            "event_id": str(event.id),
            "type": event.type,
            "job_id": str(event.job_id),
            "version": event.version,
        },
    )
    return True


@cache
def _events() -> Any:
    return boto3.client("events")


def put_on_bus(event: JobEvent) -> None:
    result = _events().put_events(
        Entries=[
            {
                "Source": SOURCE,
                "DetailType": event.type,
                "Detail": event.model_dump_json(),
                "EventBusName": settings().event_bus_name,
            }
        ]
    )
    if result.get("FailedEntryCount"):
        raise PublishFailed(result["Entries"][0].get("ErrorMessage", "put_events failed"))
