"""SQS consumer of the offer queue: runs one wave of offers per message, reporting partial
failures. A failed wave (Redis unreachable, say) returns to the queue and runs again after the
visibility timeout; after a few receives it lands in the dead-letter queue."""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from dispatch import db
from dispatch.entrypoints import queue_consumer
from dispatch.offers import rounds, waves


def run_wave(record: SQSRecord) -> None:
    request = waves.WaveRequest.model_validate_json(record.body)
    db.run(lambda conn: waves.run_wave(conn, request, rounds.sqs_schedule))


lambda_handler = queue_consumer(run_wave, BatchProcessor(event_type=EventType.SQS))
