"""The outbox publisher's work: a job's events onto the EventBridge bus, in the job's order,
and the record that they are there (`published_at`: "published" means on the bus). A job's
events are those of both tables of the outbox, `job_events` and `offer_events`
(dispatch.outbox.sql): the offer round's, the applications' and the choice's events travel
the same way as the job's own.

A queue message names an event; the publisher puts that event and every earlier one of its
job still unpublished, read from the tables (a message lost with its queue, or a resend that
arrives after a later version, changes nothing: the tables are the record, the queue a
wake-up call). What is already published is skipped, so a message delivered twice acts once.
A batch's jobs go all at once first, ten events to a PutEvents call; what that could not put,
each message then puts for its own job.
Each put comes before its record, outside any transaction, so a crash between the two can
repeat a put; bus consumers dedupe by event id.
"""

from collections.abc import Callable, Mapping, Sequence
from uuid import UUID

from dispatch import aws
from dispatch.config.outbox import outbox_settings
from dispatch.db import Connection
from dispatch.events import Event
from dispatch.observability import count, logger
from dispatch.outbox import sql

SOURCE = "dispatch.jobs"

PutAll = Callable[[Sequence[Event]], None]


class PublishFailed(Exception):
    pass


def publish_up_to(
    conn: Connection,
    heads: Mapping[UUID, int],
    put: PutAll,
    then: Callable[[Event], None] | None = None,
    after: Callable[[Connection, Sequence[Event]], None] | None = None,
) -> list[Event]:
    """Put each job's unpublished events up to its version in `heads` on the bus, job after
    job, each in the job's order, ten to a call (a wave's offers come in dozens, a batch's
    jobs one or two each); returns those this call put. `then` runs after each put and before
    its record (the offer round an opening event starts), so a failure there retries both;
    repeats are harmless (bus consumers dedupe, a wave runs once). A failure stops here: the
    later events wait for the retry, so the bus never sees an event before an earlier one of
    its job. `after` is given every event this call put, once, even when a later put failed
    (push: a hint, which never fails the publish)."""
    rows = sql.UNPUBLISHED_UP_TO.all(
        conn, {"job_ids": list(heads), "versions": list(heads.values())}
    )
    events = [Event.from_json(row["body"]) for row in rows]
    published: list[Event] = []
    try:
        for start in range(0, len(events), PUT_EVENTS_MAX):
            batch = events[start : start + PUT_EVENTS_MAX]
            put(batch)
            if then is not None:
                for event in batch:
                    then(event)
            sql.MARK_PUBLISHED.run(conn, {"ids": [event.id for event in batch]})
            published.extend(batch)
    finally:
        announce(published)
        if after is not None:
            after(conn, published)
    return published


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


def put_all_on_bus(events: Sequence[Event]) -> None:
    for start in range(0, len(events), PUT_EVENTS_MAX):
        result = aws.client("events").put_events(
            Entries=[
                {
                    "Source": SOURCE,
                    "DetailType": event.type,
                    "Detail": event.to_json(),
                    "EventBusName": outbox_settings().event_bus_name,
                }
                for event in events[start : start + PUT_EVENTS_MAX]
            ]
        )
        if result.get("FailedEntryCount"):
            failed = next(e for e in result["Entries"] if e.get("ErrorCode"))
            raise PublishFailed(failed.get("ErrorMessage", "put_events failed"))
