"""SQS FIFO consumer: publishes a job's events (its own and its offer round's, applications'
and choice's) to the EventBridge bus, reporting partial failures. Each message names an
event; its job's unpublished events up to it go on the bus from the tables, in the job's order
(dispatch.outbox.publisher): the batch's jobs at once first, then each message for its own job,
which finds its events published unless the batch failed. An event that opens a job (created,
reopened, released) also starts its round of offers, and every event put goes to the phones
that may hear it (its deliveries onto the push delivery queue, for the poster).

FIFO order is kept per job (message group): the FIFO batch processor stops at the first
failure and hands the rest back, so a poison message holds up its own job only, and lands in
the dead-letter queue after a few receives.
"""

from uuid import UUID

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from dispatch import db
from dispatch.entrypoints import queue_consumer
from dispatch.events import Event
from dispatch.offers import waves
from dispatch.outbox.publisher import publish_up_to, put_all_on_bus
from dispatch.push import delivery


def publish_batch(records: list[SQSRecord]) -> None:
    """Every job the batch names at once, ten events to a PutEvents call (a call per message
    was a call per event: the most of the publisher's time, and of the bus's requests)."""
    heads: dict[UUID, int] = {}
    for event in (Event.from_json(record.body) for record in records):
        heads[event.job_id] = max(event.version, heads.get(event.job_id, 0))
    db.run(
        lambda conn: publish_up_to(
            conn, heads, put_all_on_bus, then=waves.start_round, after=delivery.push_published
        )
    )


def publish_record(record: SQSRecord) -> None:
    """One message on its own: its job's events up to it."""
    publish_batch([record])


# On a failure only the rest of that message group (that job) waits; other jobs go on.
lambda_handler = queue_consumer(
    publish_record, SqsFifoPartialProcessor(skip_group_on_error=True), batch_first=publish_batch
)
