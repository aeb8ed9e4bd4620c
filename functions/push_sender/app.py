"""The push sender, in the VPC beside the database: the poster's reports of gone connections
(the gone queue), forgotten; and, on its schedule, the end of connections whose token
expired. Who hears an event is decided by the outbox publisher as it puts the event on the
bus (dispatch.push.delivery.push_published). It may not call the management API
(docs/architecture.md, "Push")."""

import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.entrypoints import lambda_entrypoint, queue_consumer
from dispatch.observability import logger
from dispatch.push import delivery


def forget_record(record: SQSRecord) -> None:
    """One report of gone connections (410s the poster met), to forget."""
    gone = delivery.gone_of(json.loads(record.body))
    if gone is None:
        raise ValueError("not a report of gone connections")
    db.run(lambda conn: delivery.forget_gone(conn, gone))


def close_expired(_: LambdaContext) -> dict[str, int]:
    ended = db.run(lambda conn: delivery.close_expired(conn, delivery.send_to_delivery_queue))
    if ended:
        logger.info("expired connections closed", extra={"closed": len(ended)})
    return {"closed": len(ended)}


_forget = queue_consumer(forget_record, BatchProcessor(event_type=EventType.SQS))
_expire = lambda_entrypoint(lambda event, context: close_expired(context))


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    """The gone queue's batches, or the schedule's tick."""
    return _forget(event, context) if "Records" in event else _expire(event, context)
