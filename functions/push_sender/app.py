"""The push sender, in the VPC beside the database: events from the bus (an EventBridge rule
puts every event on the push queue) to the deliveries of every connection allowed to hear
them, on the delivery queue (the poster, outside the VPC, posts them); the poster's reports of
gone connections (the gone queue), forgotten; and, on its schedule, the end of connections
whose token expired. It may not call the management API (docs/architecture.md, "Push")."""

import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.entrypoints import lambda_entrypoint, queue_consumer
from dispatch.events import Event
from dispatch.models import to_json
from dispatch.observability import logger
from dispatch.push import delivery


def push_record(record: SQSRecord) -> None:
    """One EventBridge event (its `detail` is the event) to its recipients' deliveries, or
    one report of gone connections to forget."""
    body = json.loads(record.body)
    gone = delivery.gone_of(body)
    if gone is not None:
        db.run(lambda conn: delivery.forget_gone(conn, gone))
        return
    # Sent on as the bus carried it (the same envelope, the same bytes; docs/architecture.md).
    event = Event.from_json(to_json(body["detail"]))
    db.run(lambda conn: delivery.deliver(conn, event, delivery.send_to_delivery_queue))


def close_expired(_: LambdaContext) -> dict[str, int]:
    ended = db.run(lambda conn: delivery.close_expired(conn, delivery.send_to_delivery_queue))
    if ended:
        logger.info("expired connections closed", extra={"closed": len(ended)})
    return {"closed": len(ended)}


_push = queue_consumer(push_record, BatchProcessor(event_type=EventType.SQS))
_expire = lambda_entrypoint(lambda event, context: close_expired(context))


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    """The push and gone queues' batches, or the schedule's tick."""
    return _push(event, context) if "Records" in event else _expire(event, context)
