"""SQS FIFO consumer: publishes a job's events (its own and its offer round's, applications'
and choice's) to the EventBridge bus, reporting partial failures. Each message names an
event; its job's unpublished events up to it go on the bus from the tables, in the job's order
(dispatch.outbox.publisher). An event that opens a job (created,
reopened, released) also starts its round of offers.

FIFO order is kept per job (message group): the FIFO batch processor stops at the first
failure and hands the rest back, so a poison message holds up its own job only, and lands in
the dead-letter queue after a few receives.
"""

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from dispatch import db
from dispatch.entrypoints import queue_consumer
from dispatch.events import Event
from dispatch.offers import waves
from dispatch.outbox.publisher import publish_up_to, put_all_on_bus


def publish_record(record: SQSRecord) -> None:
    event = Event.from_json(record.body)
    db.run(
        lambda conn: publish_up_to(
            conn, event.job_id, event.version, put_all_on_bus, then=waves.start_round
        )
    )


# On a failure only the rest of that message group (that job) waits; other jobs go on.
lambda_handler = queue_consumer(publish_record, SqsFifoPartialProcessor(skip_group_on_error=True))
