"""SQS consumer of the offer queue: runs one wave of offers per message, reporting partial
failures. A failed wave (Redis unreachable, say) returns to the queue and runs again after the
visibility timeout; after a few receives it lands in the dead-letter queue."""

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.config import settings
from dispatch.observability import logger, metrics
from dispatch.offers import waves
from dispatch.outbox.publisher import put_all_on_bus

processor = BatchProcessor(event_type=EventType.SQS)


def run_wave(record: SQSRecord) -> None:
    request = waves.WaveRequest.model_validate_json(record.body)
    db.run(lambda conn: waves.run_wave(conn, request, waves.sqs_schedule, put_all_on_bus))


settings()  # at cold start: a bad environment fails the init, not the first event


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=run_wave, processor=processor, context=context
    )
